#include "http/server.h"

#include <optional>

namespace sluice::http {

namespace bhttp = beast::http;

struct Server::State {
  explicit State(asio::io_context& io) : acceptor(io) {}
  tcp::acceptor acceptor;
  Handler handler;
  ServerLimits limits;
  std::atomic<bool> stopping{false};
  std::atomic<size_t> connections{0};
  std::atomic<size_t> in_flight{0};
};

HttpResponse MakeResponse(bhttp::status status, std::string body, std::string_view content_type,
                          unsigned version, bool keep_alive) {
  HttpResponse response{status, version};
  response.set(bhttp::field::server, "sluice");
  response.set(bhttp::field::content_type,
               beast::string_view(content_type.data(), content_type.size()));
  response.body() = std::move(body);
  response.keep_alive(keep_alive);
  response.prepare_payload();
  return response;
}

namespace {

// The answer to a request that could not be read, or none when the client just went away.
std::optional<HttpResponse> ReadFailure(const beast::error_code& ec) {
  using bhttp::status;
  if (ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
      ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
    return std::nullopt;
  }
  if (ec == beast::error::timeout)
    return MakeResponse(status::request_timeout, "request timeout\n");
  if (ec == bhttp::error::header_limit) {
    return MakeResponse(status::request_header_fields_too_large, "request headers too large\n");
  }
  if (ec == bhttp::error::body_limit)
    return MakeResponse(status::payload_too_large, "request body too large\n");
  return MakeResponse(status::bad_request, "bad request: " + ec.message() + "\n");
}

struct InFlightGuard {
  std::atomic<size_t>& count;
  explicit InFlightGuard(std::atomic<size_t>& c) : count(c) { ++count; }
  ~InFlightGuard() { --count; }
  InFlightGuard(const InFlightGuard&) = delete;
  InFlightGuard& operator=(const InFlightGuard&) = delete;
};

asio::awaitable<void> Session(tcp::socket socket, std::shared_ptr<Server::State> state) {
  InFlightGuard connection(state->connections);
  beast::error_code ec;
  const asio::ip::address peer = socket.remote_endpoint(ec).address();
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  bool first = true;
  while (!state->stopping) {
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(static_cast<uint32_t>(state->limits.max_header_bytes));
    parser.body_limit(state->limits.max_body_bytes);
    // The first byte of a kept-alive connection's next request may be long coming; once it
    // has started, the whole request must arrive within the header timeout.
    stream.expires_after(first ? state->limits.header_timeout : state->limits.idle_timeout);
    first = false;
    co_await bhttp::async_read_header(stream, buffer, parser,
                                      asio::redirect_error(asio::use_awaitable, ec));
    if (!ec && !parser.is_done()) {
      stream.expires_after(state->limits.header_timeout);
      co_await bhttp::async_read(stream, buffer, parser,
                                 asio::redirect_error(asio::use_awaitable, ec));
    }
    if (ec) {
      if (std::optional<HttpResponse> failure = ReadFailure(ec)) {
        failure->keep_alive(false);
        stream.expires_after(state->limits.write_timeout);
        co_await bhttp::async_write(stream, *failure,
                                    asio::redirect_error(asio::use_awaitable, ec));
      }
      break;
    }
    HttpRequest request = parser.release();
    const bool keep_alive = request.keep_alive();
    HttpResponse response;
    {
      InFlightGuard handling(state->in_flight);
      response = co_await state->handler(std::move(request), peer);
    }
    response.keep_alive(keep_alive && !state->stopping);
    stream.expires_after(state->limits.write_timeout);
    co_await bhttp::async_write(stream, response, asio::redirect_error(asio::use_awaitable, ec));
    if (ec || !response.keep_alive()) break;
  }
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
}

asio::awaitable<void> Accept(std::shared_ptr<Server::State> state) {
  tcp::acceptor& acceptor = state->acceptor;
  while (!state->stopping) {
    beast::error_code ec;
    tcp::socket socket =
        co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted || state->stopping) break;
    if (ec) continue;  // a connection that died before it was accepted, or out of descriptors
    socket.set_option(tcp::no_delay(true), ec);
    asio::co_spawn(acceptor.get_executor(), Session(std::move(socket), state), asio::detached);
  }
}

}  // namespace

Server::Server(asio::io_context& io, Handler handler, ServerLimits limits)
    : io_(io), state_(std::make_shared<State>(io)) {
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
  tcp::acceptor& acceptor = state_->acceptor;
  acceptor.open(where.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(where, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return Status::Unavailable("cannot listen on " + endpoint.ToString() + ": " + ec.message());
  asio::co_spawn(io_, Accept(state_), asio::detached);
  return {};
}

size_t Server::Connections() const { return state_->connections.load(); }
size_t Server::InFlight() const { return state_->in_flight.load(); }

uint16_t Server::port() const {
  beast::error_code ec;
  return state_->acceptor.local_endpoint(ec).port();
}

void Server::StopAccepting() {
  if (state_->stopping.exchange(true)) return;
  asio::post(io_, [state = state_] {
    beast::error_code ec;
    state->acceptor.close(ec);
  });
}

}  // namespace sluice::http
