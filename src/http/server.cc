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
  State(EventLoops& loops, std::shared_ptr<const Clock> c)
      : clock(ClockOrSteady(std::move(c))), loops(loops), acceptor(loops[0]) {}
  const std::shared_ptr<const Clock> clock;
  EventLoops& loops;
  asio::basic_socket_acceptor<tcp, Executor> acceptor;
  Handler handler;
  ServerLimits limits;
  std::atomic<bool> stopping{false};
  std::atomic<bool> closed{false};
  std::atomic<size_t> connections{0};
  std::atomic<size_t> in_flight{0};
  std::atomic<uint64_t> accept_pauses{0};
  ThrottledLog accept_log{std::chrono::seconds(10), clock};
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

// One connection, served as Beast's example sessions serve theirs: read a request's head, admit
// it (or refuse it while draining), read its body (after a 100 Continue when asked), handle it,
// write the answer, and go on while the connection is kept alive; then close. Each step that
// waits sets the deadline it waits under. Not thread-safe: it runs on its connection's loop.
class Session {
 public:
  Session(Socket socket, size_t loop, std::shared_ptr<Server::State> state)
      : socket_(std::move(socket)),
        loop_(loop),
        state_(std::move(state)),
        limits_(state_->limits),
        connection_(state_->connections),
        peer_(PeerOf(socket_)),
        deadline_(socket_, state_->clock) {}

  // Serves requests until the connection ends, then closes it.
  Awaitable<void> Run() {
    // The co_await in a statement of its own: GCC 12 miscompiles one in a loop's condition (the
    // callee's `this` is lost, and the process crashes), so the steps below name their results
    // too.
    while (!state_->stopping) {
      const bool kept_alive = co_await ServeOne();
      if (!kept_alive) break;
    }
    // After the last request: a drain does not wait for the close, and that request's memory is
    // gone meanwhile.
    co_await Close();
  }

 private:
  using Parser = bhttp::request_parser<bhttp::string_body, FieldAllocator<char>>;

  static Peer PeerOf(const Socket& socket) {
    beast::error_code ec;
    return Peer(socket.remote_endpoint(ec).address());
  }

  // One request, from its head to its answer; false when the connection ends after it.
  Awaitable<bool> ServeOne() {
    answered_ = false;
    Parser parser;
    parser.header_limit(static_cast<uint32_t>(limits_.max_header_bytes));
    parser.body_limit(limits_.max_body_bytes);
    const bool head_read = co_await ReadHead(parser);
    if (!head_read) co_return false;
    // Counted from a request's head to the end of its response, so that a drain waits for it.
    InFlightGuard handling(state_->in_flight);
    if (std::optional<HttpResponse> refusal = Inadmissible(parser.get())) {
      co_await Refuse(std::move(refusal));
      co_return false;
    }
    // A plain test first: a coroutine's frame is allocated even when it need not wait.
    if (WaitsForContinue(parser)) {
      const bool continued = co_await SendContinue();
      if (!continued) co_return false;
    }
    const bool body_read = co_await ReadBody(parser);
    if (!body_read) co_return false;
    const bool kept_alive = co_await Answer(parser);
    co_return kept_alive;
  }

  // Reads a request's head into `parser`. A kept-alive connection's next request may be long
  // coming: the idle timeout bounds the wait for its first bytes, the header timeout the rest of
  // its head, so that a head sent a byte at a time is cut off as on a new connection. False when
  // the connection ends (answered, when the head was bad and the socket can still say so).
  Awaitable<bool> ReadHead(Parser& parser) {
    beast::error_code ec;
    if (!first_ && buffer_.size() == 0) {
      deadline_.ExpiresAfter(limits_.idle_timeout);
      const size_t n = co_await socket_.async_read_some(ReadRoom(buffer_),
                                                        asio::redirect_error(kUseAwaitable, ec));
      buffer_.commit(n);
      if (!ec) ParseBuffered(parser, buffer_, ec);
    }
    first_ = false;
    if (!ec && !parser.is_header_done()) {
      deadline_.ExpiresAfter(limits_.header_timeout);
      co_await bhttp::async_read_header(socket_, buffer_, parser,
                                        asio::redirect_error(kUseAwaitable, ec));
    }
    if (!ec) co_return true;
    std::optional<HttpResponse> failure = ReadFailure(ec);
    co_await RefuseUnlessExpired(std::move(failure));
    co_return false;
  }

  // The refusal of a request that must not be handled, or none.
  std::optional<HttpResponse> Inadmissible(HttpRequest& request) const {
    // Read after the in-flight count is raised, as Close's caller reads the count after the flag
    // is set: either the drain waits for this request or the request sees the drain is over.
    if (state_->closed) return MakeResponse(bhttp::status::service_unavailable, "shutting down\n");
    // RFC 9112 3.2: Host as it must be, and one authority and path whatever the target's form.
    if (Status host = NormalizeHostAndTarget(request); !host.ok()) {
      return MakeResponse(bhttp::status::bad_request, "bad request: " + host.message() + "\n");
    }
    return std::nullopt;
  }

  // Whether the client waits for a 100 Continue before it sends the body. HTTP/1.0 clients do
  // not know interim answers (RFC 9110 15.2).
  static bool WaitsForContinue(const Parser& parser) {
    return beast::iequals(parser.get()[bhttp::field::expect], "100-continue") &&
           parser.get().version() >= 11 && !parser.is_done();
  }

  // Tells a client that waits before sending its body to send it; false when that fails.
  Awaitable<bool> SendContinue() {
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    deadline_.ExpiresAfter(limits_.write_timeout);
    beast::error_code ec;
    co_await asio::async_write(socket_, asio::buffer(kContinue.data(), kContinue.size()),
                               asio::redirect_error(kUseAwaitable, ec));
    co_return !ec;
  }

  // Reads the request's body, within the header timeout; false when the connection ends
  // (answered, when the body was bad and the socket can still say so).
  Awaitable<bool> ReadBody(Parser& parser) {
    beast::error_code ec;
    if (!parser.is_done()) {
      deadline_.ExpiresAfter(limits_.header_timeout);
      co_await bhttp::async_read(socket_, buffer_, parser, asio::redirect_error(kUseAwaitable, ec));
    }
    if (ec || UnframedBody(parser.get())) {
      // Named, not a temporary of the co_await: GCC 12 destroys a conditional's temporary there
      // twice.
      std::optional<HttpResponse> failure =
          ec ? ReadFailure(ec)
             : MakeResponse(bhttp::status::bad_request, "bad request: unframed body\n");
      co_await RefuseUnlessExpired(std::move(failure));
      co_return false;
    }
    // The deadline may have closed the socket in the same turn of the loop as the read ended.
    co_return !deadline_.expired();
  }

  // Hands the request to the handler and writes its answer; false when the connection ends
  // after it.
  Awaitable<bool> Answer(Parser& parser) {
    // No deadline while the request is handled: the store and the upstream keep their own.
    deadline_.ExpiresNever();
    HttpRequest request = parser.release();
    const bool keep_alive = request.keep_alive();
    // Whoever made the answer, a HEAD request gets its head alone (RFC 9110 9.3.2).
    const bool with_body = request.method() != bhttp::verb::head;
    HttpResponse response = co_await state_->handler(std::move(request), peer_, loop_);
    response.keep_alive(keep_alive && !state_->stopping);
    const bool written = co_await Write(response, with_body);
    co_return written&& response.keep_alive();
  }

  // Writes `message` within the write timeout; false when that fails.
  Awaitable<bool> Write(const HttpResponse& message, bool with_body) {
    deadline_.ExpiresAfter(limits_.write_timeout);
    beast::error_code ec;
    MessageBuffers buffers = SerializeMessage(message, head_, with_body);
    if (!WriteNow(socket_, buffers, ec))
      co_await asio::async_write(socket_, buffers, asio::redirect_error(kUseAwaitable, ec));
    answered_ = !ec;
    co_return !ec;
  }

  // Sends `refusal`, the last answer on the connection; nothing when there is none (the client
  // went away).
  Awaitable<void> Refuse(std::optional<HttpResponse> refusal) {
    if (!refusal) co_return;
    refusal->keep_alive(false);
    // The connection ends after it, so a body a HEAD request should not see cannot mislead.
    co_await Write(*refusal, /*with_body=*/true);
  }

  // Refuse, unless the deadline closed the socket: then it cannot answer.
  Awaitable<void> RefuseUnlessExpired(std::optional<HttpResponse> refusal) {
    if (!deadline_.expired()) co_await Refuse(std::move(refusal));
  }

  // Closing a socket with unread bytes resets the connection, and the reset can overtake the
  // last answer: a client still sending a body the gateway refused, or requests pipelined
  // behind a `Connection: close`, would lose it. So after the last answer the send side is shut
  // and what the client still sends is read and dropped, until it closes or kLingerTime passes
  // (nginx's lingering close). Without an answer, there is nothing to protect.
  Awaitable<void> Close() {
    beast::error_code ec;
    socket_.shutdown(Socket::shutdown_send, ec);
    if (!answered_) co_return;
    deadline_.ExpiresAfter(kLingerTime);
    while (!ec) {
      buffer_.clear();
      co_await socket_.async_read_some(ReadRoom(buffer_), asio::redirect_error(kUseAwaitable, ec));
    }
  }

  Socket socket_;
  const size_t loop_;
  const std::shared_ptr<Server::State> state_;
  const ServerLimits& limits_;
  InFlightGuard connection_;
  const Peer peer_;
  SocketDeadline<Socket> deadline_;
  beast::flat_buffer buffer_;
  std::string head_;  // each response's head, written into the same memory
  bool first_ = true;
  bool answered_ = false;  // whether the connection ends right after an answer
};

Awaitable<void> ServeConnection(Socket socket, size_t loop, std::shared_ptr<Server::State> state) {
  Session session(std::move(socket), loop, std::move(state));
  co_await session.Run();
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
  BasicClockTimer<Executor> timer(state.acceptor.get_executor(), state.clock);
  timer.expires_after(kPause);
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
    asio::co_spawn(executor, ServeConnection(std::move(socket), loop, state), asio::detached);
  }
}

}  // namespace

Server::Server(EventLoops& loops, Handler handler, ServerLimits limits,
               std::shared_ptr<const Clock> clock)
    : state_(std::make_shared<State>(loops, std::move(clock))) {
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
