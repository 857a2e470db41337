#include "http/upstream.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include "http/string_views.h"
#include "http/wire.h"

namespace sluice::http {

namespace bhttp = beast::http;

namespace {

bool TimedOut(const beast::error_code& ec) { return ec == beast::error::timeout; }

// An operation's error, named a timeout when the connection's deadline cut it short.
template <class Deadline>
beast::error_code Failure(beast::error_code ec, const Deadline& deadline) {
  return ec && deadline.expired() ? beast::error::timeout : ec;
}

bool Idempotent(bhttp::verb method) {
  using bhttp::verb;
  return method == verb::get || method == verb::head || method == verb::options ||
         method == verb::put || method == verb::delete_ || method == verb::trace;
}

// The headers that belong to one connection whatever Connection says (RFC 9110 7.6.1).
bool IsHopByHop(bhttp::field name) {
  using bhttp::field;
  return name == field::connection || name == field::keep_alive ||
         name == field::proxy_connection || name == field::te || name == field::trailer ||
         name == field::transfer_encoding || name == field::upgrade;
}

// Whether a Connection option may remove the header it names. Host is every request's own
// (RFC 9112 3.2): a client naming it would send the upstream a request it must refuse.
bool RemovableByConnection(beast::string_view token) {
  const bhttp::field name = bhttp::string_to_field(token);
  return !IsHopByHop(name) && name != bhttp::field::host && !beast::iequals(token, "close");
}

// Removes Connection, every header it lists, and the fixed hop-by-hop headers, in one pass
// over the fields; the usual Connection values (keep-alive, close) name nothing else to remove.
template <bool IsRequest>
void RemoveHopByHop(bhttp::message<IsRequest, bhttp::string_body, Fields>& message) {
  std::vector<std::string> named;
  for (auto it = message.find(bhttp::field::connection);
       it != message.end() && it->name() == bhttp::field::connection; ++it) {
    for (auto token : bhttp::token_list(it->value())) {
      if (RemovableByConnection(token)) named.emplace_back(token);
    }
  }
  for (auto it = message.begin(); it != message.end();) {
    const bool hop = IsHopByHop(it->name()) ||
                     std::any_of(named.begin(), named.end(), [&](const std::string& name) {
                       return beast::iequals(it->name_string(), name);
                     });
    it = hop ? message.erase(it) : std::next(it);
  }
}

// Whether the upstream has neither closed a pooled connection nor sent on it unasked: nothing
// to read, and no end of stream. Upstreams close idle connections on their own schedule (a few
// seconds for some), and a request that cannot be retried must not go out on one of those.
bool StillOpen(Socket& socket) {
  char byte = 0;
  const ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

}  // namespace

std::string JoinedHeader(const HttpRequest& request, std::string_view name) {
  std::string joined;
  auto [begin, end] = request.equal_range(BeastView(name));
  for (auto it = begin; it != end; ++it) {
    if (!joined.empty()) joined += ", ";
    joined.append(it->value().data(), it->value().size());
  }
  return joined;
}

void PrepareUpstreamRequest(HttpRequest& request, const Peer& client_peer,
                            std::string_view upstream_authority) {
  RemoveHopByHop(request);
  request.erase(bhttp::field::expect);  // the gateway already has the whole body
  std::string forwarded_for = JoinedHeader(request, "X-Forwarded-For");
  if (!forwarded_for.empty()) forwarded_for += ", ";
  forwarded_for += client_peer.text;
  request.set("X-Forwarded-For", forwarded_for);
  if (request.find(bhttp::field::host) == request.end()) {
    request.set(bhttp::field::host, BeastView(upstream_authority));
  }
  request.version(11);
  request.keep_alive(true);
  request.prepare_payload();
}

void PrepareClientResponse(HttpResponse& response, bool head) {
  RemoveHopByHop(response);
  // A HEAD answer keeps the upstream's Content-Length, which describes a body not sent; so does
  // a 304's; a 204 has none (RFC 9110 8.6).
  const unsigned status = response.result_int();
  if (head || status == 204 || status == 304) return;
  response.prepare_payload();
}

UpstreamPool::UpstreamPool(asio::io_context& io, config::UpstreamConfig config, size_t idle_max,
                           std::shared_ptr<const Clock> clock)
    : io_(io),
      clock_(ClockOrSteady(std::move(clock))),
      config_(std::move(config)),
      idle_max_(idle_max),
      reaper_(io.get_executor(), clock_) {}

size_t UpstreamPool::Idle() const { return idle_.size(); }

UpstreamPool::ConnectionPtr UpstreamPool::TakeIdle(bool checked) {
  // Upstreams end idle connections after seconds, some with a last answer (408) that would be
  // read as the next request's: one idle that long is checked whatever the method. Under load a
  // connection comes back within milliseconds, and is not.
  constexpr auto kQuiet = std::chrono::seconds(1);
  const Clock::TimePoint now = clock_->Now();
  while (!idle_.empty()) {
    ConnectionPtr connection = std::move(idle_.back());
    idle_.pop_back();
    const bool check = checked || now - connection->idle_since >= kQuiet;
    if (!check || StillOpen(connection->socket)) return connection;
  }
  return nullptr;
}

void UpstreamPool::GiveBack(ConnectionPtr connection) {
  // The deadline may have closed it in the same turn of the loop that finished the exchange.
  if (!connection->socket.is_open()) return;
  // An idle connection's old deadline must not close it in the pool.
  connection->deadline.ExpiresNever();
  connection->idle_since = clock_->Now();
  if (idle_.size() < idle_max_) idle_.push_back(std::move(connection));
  if (!reaping_) Reap();
}

void UpstreamPool::Reap() {
  const Clock::TimePoint now = clock_->Now();
  // The oldest come first: connections are returned to the back.
  auto fresh = std::find_if(idle_.begin(), idle_.end(), [&](const ConnectionPtr& c) {
    return now - c->idle_since < config_.idle_timeout;
  });
  idle_.erase(idle_.begin(), fresh);
  reaping_ = !idle_.empty();
  if (!reaping_) return;
  reaper_.expires_at(idle_.front()->idle_since + config_.idle_timeout);
  // A wait that ended just before the pool did may still run its handler after the pool is gone.
  reaper_.async_wait([alive = std::weak_ptr<void>(alive_), this](const boost::system::error_code&) {
    if (alive.lock()) Reap();
  });
}

Awaitable<UpstreamPool::ConnectionPtr> UpstreamPool::Connect(beast::error_code& ec) {
  asio::ip::basic_resolver<tcp, Executor> resolver(io_);
  auto endpoints =
      co_await resolver.async_resolve(config_.address.host, std::to_string(config_.address.port),
                                      asio::redirect_error(kUseAwaitable, ec));
  if (ec) co_return nullptr;
  auto connection = std::make_unique<Connection>(io_, clock_);
  connection->deadline.ExpiresAfter(config_.connect_timeout);
  co_await asio::async_connect(connection->socket, endpoints,
                               asio::redirect_error(kUseAwaitable, ec));
  ec = Failure(ec, connection->deadline);
  if (ec) co_return nullptr;
  connection->socket.set_option(tcp::no_delay(true), ec);
  connection->socket.non_blocking(true, ec);  // for WriteNow
  ec = {};
  co_return connection;
}

Awaitable<beast::error_code> UpstreamPool::Exchange(Connection& connection,
                                                    const HttpRequest& request,
                                                    HttpResponse& response) {
  connection.deadline.ExpiresAfter(config_.timeout);  // for the whole exchange
  beast::error_code ec;
  MessageBuffers buffers = SerializeMessage(request, connection.head, /*with_body=*/true);
  if (!WriteNow(connection.socket, buffers, ec)) {
    co_await asio::async_write(connection.socket, buffers, asio::redirect_error(kUseAwaitable, ec));
  }
  if (ec) co_return Failure(ec, connection.deadline);
  for (;;) {
    bhttp::response_parser<bhttp::string_body, FieldAllocator<char>> parser;
    parser.body_limit(config_.max_response_bytes);
    if (request.method() == bhttp::verb::head) parser.skip(true);
    co_await bhttp::async_read(connection.socket, connection.buffer, parser,
                               asio::redirect_error(kUseAwaitable, ec));
    if (ec) co_return Failure(ec, connection.deadline);
    response = parser.release();
    // Interim answers (100 Continue, 103 Early Hints) precede the real one; a switch of
    // protocols cannot be relayed.
    if (response.result() == bhttp::status::switching_protocols)
      co_return bhttp::error::bad_version;
    if (response.result_int() >= 200) break;
  }
  // Bytes past the response mean the upstream is out of step: never reuse that connection.
  if (connection.buffer.size() != 0) response.keep_alive(false);
  co_return ec;
}

Awaitable<HttpResponse> UpstreamPool::Forward(const HttpRequest& request) {
  const unsigned client_version = request.version();
  // Pooled connections that turn out dead are dropped one by one; a new one ends the loop.
  for (;;) {
    beast::error_code ec;
    // A request that may go twice is retried if its pooled connection turns out dead; any
    // other gets one the upstream has not closed (one syscall to check).
    ConnectionPtr connection = TakeIdle(/*checked=*/!Idempotent(request.method()));
    const bool reused = connection != nullptr;
    if (!connection) {
      connection = co_await Connect(ec);
      if (!connection) {
        co_return MakeResponse(
            TimedOut(ec) ? bhttp::status::gateway_timeout : bhttp::status::bad_gateway,
            "upstream unreachable: " + ec.message() + "\n", "text/plain", client_version);
      }
    }
    HttpResponse response;
    ec = co_await Exchange(*connection, request, response);
    if (!ec) {
      if (response.keep_alive()) GiveBack(std::move(connection));
      co_return response;
    }
    // A pooled connection the upstream had already closed: try the next, or a new one.
    if (reused && !TimedOut(ec) && Idempotent(request.method())) continue;
    co_return MakeResponse(
        TimedOut(ec) ? bhttp::status::gateway_timeout : bhttp::status::bad_gateway,
        "upstream failed: " + ec.message() + "\n", "text/plain", client_version);
  }
  co_return MakeResponse(bhttp::status::bad_gateway, "upstream failed\n", "text/plain",
                         client_version);
}

}  // namespace sluice::http
