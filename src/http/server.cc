#include "http/server.h"

#include <optional>

#include "http/deadline.h"
#include "http/request_target.h"
#include "http/string_views.h"
#include "http/throttled_log.h"
#include "http/wire.h"

namespace sluice::http {

namespace bhttp = beast::http;

struct Server::State {
  explicit State(EventLoops& loops) : loops(loops), acceptor(loops[0]) {}
  EventLoops& loops;
  asio::basic_socket_acceptor<tcp, Executor> acceptor;
  Handler handler;
  ServerLimits limits;
  std::atomic<bool> stopping{false};
  std::atomic<bool> closed{false};
  std::atomic<size_t> connections{0};
  std::atomic<size_t> in_flight{0};
  std::atomic<uint64_t> accept_pauses{0};
  ThrottledLog accept_log{std::chrono::seconds(10)};
};

HttpResponse MakeResponse(bhttp::status status, std::string body, std::string_view content_type,
                          unsigned version, bool keep_alive) {
  HttpResponse response{status, version};
  response.set(bhttp::field::server, "sluice");
  response.set(bhttp::field::content_type, BeastView(content_type));
  response.body() = std::move(body);
  response.keep_alive(keep_alive);
  response.prepare_payload();
  return response;
}

namespace {

// What one read asks of the socket: Beast's own choice for its HTTP reads.
constexpr size_t kReadSize = 65536;
// How long a refused client may go on sending before its connection is closed.
constexpr std::chrono::seconds kLingerTime{2};

// Room in `buffer` for one read from the socket.
beast::flat_buffer::mutable_buffers_type ReadRoom(beast::flat_buffer& buffer) {
  return buffer.prepare(beast::read_size(buffer, kReadSize));
}

// Parses what `buffer` holds of a request, up to the end of its head. Not an error when the head
// is not all there yet: an asynchronous read goes on from where this stopped.
void ParseBuffered(bhttp::request_parser<bhttp::string_body, FieldAllocator<char>>& parser,
                   beast::flat_buffer& buffer, beast::error_code& ec) {
  buffer.consume(parser.put(buffer.data(), ec));
  if (ec == bhttp::error::need_more) ec = {};
}

// The answer to a request that could not be read, or none when the client just went away.
std::optional<HttpResponse> ReadFailure(const beast::error_code& ec) {
  using bhttp::status;
  if (ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
      ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
    return std::nullopt;
  }
  if (ec == bhttp::error::header_limit) {
    return MakeResponse(status::request_header_fields_too_large, "request headers too large\n");
  }
  if (ec == bhttp::error::body_limit)
    return MakeResponse(status::payload_too_large, "request body too large\n");
  return MakeResponse(status::bad_request, "bad request: " + ec.message() + "\n");
}

// A Transfer-Encoding whose last coding is not chunked leaves the body's end undefined
// (RFC 9112 6.3); such a request is refused rather than read as having no body.
bool UnframedBody(const HttpRequest& request) {
  return request.find(bhttp::field::transfer_encoding) != request.end() && !request.chunked();
}

struct InFlightGuard {
  std::atomic<size_t>& count;
  explicit InFlightGuard(std::atomic<size_t>& c) : count(c) { ++count; }
  ~InFlightGuard() { --count; }
  InFlightGuard(const InFlightGuard&) = delete;
  InFlightGuard& operator=(const InFlightGuard&) = delete;
};

// Closing a socket with unread bytes resets the connection, and the reset can overtake the
// last answer: a client still sending a body the gateway refused, or requests pipelined behind
// a `Connection: close`, would lose it. So after the last answer the send side is shut and what
// the client still sends is read into `buffer` and dropped, until it closes or kLingerTime
// passes (nginx's lingering close).
Awaitable<void> Linger(Socket& socket, SocketDeadline<Socket>& deadline,
                       beast::flat_buffer& buffer) {
  beast::error_code ec;
  socket.shutdown(Socket::shutdown_send, ec);
  deadline.ExpiresAfter(kLingerTime);
  while (!ec) {
    buffer.clear();
    co_await socket.async_read_some(ReadRoom(buffer), asio::redirect_error(kUseAwaitable, ec));
  }
}

// Sends the answer to a request that could not be read, after which the connection ends; false
// when there is none (the client went away) or it could not be sent.
Awaitable<bool> SendFailure(Socket& socket, SocketDeadline<Socket>& deadline,
                            std::optional<HttpResponse> failure, std::string& head,
                            std::chrono::milliseconds timeout) {
  if (!failure) co_return false;
  failure->keep_alive(false);
  deadline.ExpiresAfter(timeout);
  beast::error_code ec;
  // The connection ends after it, so a body a HEAD request should not see cannot mislead.
  MessageBuffers buffers = SerializeMessage(*failure, head, /*with_body=*/true);
  if (!WriteNow(socket, buffers, ec))
    co_await asio::async_write(socket, buffers, asio::redirect_error(kUseAwaitable, ec));
  co_return !ec;
}

Awaitable<void> Session(Socket socket, size_t loop, std::shared_ptr<Server::State> state) {
  InFlightGuard connection(state->connections);
  const ServerLimits& limits = state->limits;
  beast::error_code ec;
  const Peer peer(socket.remote_endpoint(ec).address());
  SocketDeadline deadline(socket);
  beast::flat_buffer buffer;
  std::string head;  // each response's head, written into the same memory
  bool first = true;
  bool answered = false;  // whether the connection ends right after an answer
  while (!state->stopping) {
    answered = false;
    bhttp::request_parser<bhttp::string_body, FieldAllocator<char>> parser;
    parser.header_limit(static_cast<uint32_t>(limits.max_header_bytes));
    parser.body_limit(limits.max_body_bytes);
    // A kept-alive connection's next request may be long coming: the idle timeout bounds the
    // wait for its first bytes, the header timeout the rest of its head, so that a head sent a
    // byte at a time is cut off as on a new connection.
    if (!first && buffer.size() == 0) {
      deadline.ExpiresAfter(limits.idle_timeout);
      const size_t n = co_await socket.async_read_some(ReadRoom(buffer),
                                                       asio::redirect_error(kUseAwaitable, ec));
      buffer.commit(n);
      if (!ec) ParseBuffered(parser, buffer, ec);
    }
    first = false;
    if (!ec && !parser.is_header_done()) {
      deadline.ExpiresAfter(limits.header_timeout);
      co_await bhttp::async_read_header(socket, buffer, parser,
                                        asio::redirect_error(kUseAwaitable, ec));
    }
    // A socket the deadline closed cannot answer.
    if (ec) {
      if (!deadline.expired()) {
        answered =
            co_await SendFailure(socket, deadline, ReadFailure(ec), head, limits.write_timeout);
      }
      break;
    }
    // Counted from a request's head to the end of its response, so that a drain waits for it.
    InFlightGuard handling(state->in_flight);
    // Read after the count is raised, as Close's caller reads the count after the flag is set:
    // either the drain waits for this request or the request sees the drain is over.
    if (state->closed) {
      std::optional<HttpResponse> refusal =
          MakeResponse(bhttp::status::service_unavailable, "shutting down\n");
      answered =
          co_await SendFailure(socket, deadline, std::move(refusal), head, limits.write_timeout);
      break;
    }
    // RFC 9112 3.2: Host as it must be, and one authority and path whatever the target's form.
    if (Status host = NormalizeHostAndTarget(parser.get()); !host.ok()) {
      std::optional<HttpResponse> refusal =
          MakeResponse(bhttp::status::bad_request, "bad request: " + host.message() + "\n");
      answered =
          co_await SendFailure(socket, deadline, std::move(refusal), head, limits.write_timeout);
      break;
    }
    // HTTP/1.0 clients do not know interim answers (RFC 9110 15.2).
    if (beast::iequals(parser.get()[bhttp::field::expect], "100-continue") &&
        parser.get().version() >= 11 && !parser.is_done()) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      deadline.ExpiresAfter(limits.write_timeout);
      co_await asio::async_write(socket, asio::buffer(kContinue.data(), kContinue.size()),
                                 asio::redirect_error(kUseAwaitable, ec));
      if (ec) break;
    }
    if (!parser.is_done()) {
      deadline.ExpiresAfter(limits.header_timeout);
      co_await bhttp::async_read(socket, buffer, parser, asio::redirect_error(kUseAwaitable, ec));
    }
    if (ec || UnframedBody(parser.get())) {
      // Named, not a temporary of the co_await: GCC 12 destroys a conditional's temporary there
      // twice.
      std::optional<HttpResponse> failure =
          ec ? ReadFailure(ec)
             : MakeResponse(bhttp::status::bad_request, "bad request: unframed body\n");
      if (!deadline.expired()) {
        answered =
            co_await SendFailure(socket, deadline, std::move(failure), head, limits.write_timeout);
      }
      break;
    }
    // The deadline may have closed the socket in the same turn of the loop as the read ended.
    if (deadline.expired()) break;
    // No deadline while the request is handled: the store and the upstream keep their own.
    deadline.ExpiresNever();
    HttpRequest request = parser.release();
    const bool keep_alive = request.keep_alive();
    // Whoever made the answer, a HEAD request gets its head alone (RFC 9110 9.3.2).
    const bool with_body = request.method() != bhttp::verb::head;
    HttpResponse response = co_await state->handler(std::move(request), peer, loop);
    response.keep_alive(keep_alive && !state->stopping);
    deadline.ExpiresAfter(limits.write_timeout);
    MessageBuffers buffers = SerializeMessage(response, head, with_body);
    if (!WriteNow(socket, buffers, ec))
      co_await asio::async_write(socket, buffers, asio::redirect_error(kUseAwaitable, ec));
    answered = !ec;
    if (ec || !response.keep_alive()) break;
  }
  // After the loop: a drain does not wait for it, and the last request's memory is gone.
  if (answered) {
    co_await Linger(socket, deadline, buffer);
  } else {
    socket.shutdown(Socket::shutdown_send, ec);
  }
}

std::string ListeningOn(const asio::basic_socket_acceptor<tcp, Executor>& acceptor) {
  beast::error_code ec;
  const tcp::endpoint local = acceptor.local_endpoint(ec);
  return ec ? "a listener" : local.address().to_string() + ":" + std::to_string(local.port());
}

bool OutOfDescriptors(const beast::error_code& ec) {
  return ec == asio::error::no_descriptors || ec == beast::errc::too_many_files_open_in_system;
}

// Out of descriptors, accept fails at once for as long as the queue holds a connection: retried
// at once, it would burn a core. A pause lets connections close meanwhile (nginx does the same).
Awaitable<void> PauseAccepting(Server::State& state, const beast::error_code& ec) {
  constexpr std::chrono::milliseconds kPause{100};
  state.accept_pauses.fetch_add(1, std::memory_order_relaxed);
  state.accept_log.Warn("not accepting connections for " + std::to_string(kPause.count()) +
                            " ms on " + ListeningOn(state.acceptor),
                        ec.message());
  asio::steady_timer timer(state.acceptor.get_executor(), kPause);
  beast::error_code ignored;  // cancelled only as the server stops, which the loop then sees
  co_await timer.async_wait(asio::redirect_error(kUseAwaitable, ignored));
}

Awaitable<void> Accept(std::shared_ptr<Server::State> state) {
  asio::basic_socket_acceptor<tcp, Executor>& acceptor = state->acceptor;
  while (!state->stopping) {
    beast::error_code ec;
    const size_t loop = state->loops.Next();
    Socket socket =
        co_await acceptor.async_accept(state->loops[loop], asio::redirect_error(kUseAwaitable, ec));
    if (ec == asio::error::operation_aborted || state->stopping) break;
    if (OutOfDescriptors(ec)) {
      co_await PauseAccepting(*state, ec);
      continue;
    }
    if (ec) continue;  // a connection that died before it was accepted
    if (state->connections.load() >= state->limits.max_connections) {
      socket.close(ec);  // past the cap: no memory is promised to one more connection
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    socket.non_blocking(true, ec);  // for WriteNow; Asio sets the descriptor so for itself anyway
    auto executor = socket.get_executor();
    asio::co_spawn(executor, Session(std::move(socket), loop, state), asio::detached);
  }
}

}  // namespace

Server::Server(EventLoops& loops, Handler handler, ServerLimits limits)
    : state_(std::make_shared<State>(loops)) {
  state_->handler = std::move(handler);
  state_->limits = limits;
}

Server::~Server() { StopAccepting(); }

Status Server::Listen(const config::Endpoint& endpoint) {
  beast::error_code ec;
  const asio::ip::address address = asio::ip::make_address(endpoint.host, ec);
  if (ec)
    return Status::InvalidArgument("cannot listen on " + endpoint.ToString() +
                                   ": not an IP address");
  const tcp::endpoint where(address, endpoint.port);
  asio::basic_socket_acceptor<tcp, Executor>& acceptor = state_->acceptor;
  acceptor.open(where.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(where, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return Status::Unavailable("cannot listen on " + endpoint.ToString() + ": " + ec.message());
  asio::co_spawn(acceptor.get_executor(), Accept(state_), asio::detached);
  return {};
}

size_t Server::Connections() const { return state_->connections.load(); }

uint64_t Server::AcceptPauses() const {
  return state_->accept_pauses.load(std::memory_order_relaxed);
}
size_t Server::InFlight() const { return state_->in_flight.load(); }

uint16_t Server::port() const {
  beast::error_code ec;
  return state_->acceptor.local_endpoint(ec).port();
}

void Server::StopAccepting() {
  if (state_->stopping.exchange(true)) return;
  asio::post(state_->acceptor.get_executor(), [state = state_] {
    beast::error_code ec;
    state->acceptor.close(ec);
  });
}

void Server::Close() { state_->closed = true; }

}  // namespace sluice::http
