#include "http/upstream.h"

#include <algorithm>
#include <optional>

namespace sluice::http {

namespace bhttp = beast::http;

namespace {

// Only the deadlines set here cancel upstream operations, so a cancelled one ran out of time;
// Beast reports that as timeout, or as operation_aborted when the deadline fires between steps.
bool TimedOut(const beast::error_code& ec) {
  return ec == beast::error::timeout || ec == asio::error::operation_aborted;
}

bool Idempotent(bhttp::verb method) {
  using bhttp::verb;
  return method == verb::get || method == verb::head || method == verb::options ||
         method == verb::put || method == verb::delete_ || method == verb::trace;
}

// Removes Connection, every header it lists, and the fixed hop-by-hop headers.
template <bool IsRequest>
void RemoveHopByHop(bhttp::message<IsRequest, bhttp::string_body>& message) {
  std::vector<std::string> named;
  for (auto it = message.find(bhttp::field::connection);
       it != message.end() && it->name() == bhttp::field::connection; ++it) {
    for (auto token : bhttp::token_list(it->value())) named.emplace_back(token);
  }
  for (const std::string& name : named) message.erase(beast::string_view(name));
  for (bhttp::field f : {bhttp::field::connection, bhttp::field::keep_alive,
                         bhttp::field::proxy_connection, bhttp::field::te, bhttp::field::trailer,
                         bhttp::field::transfer_encoding, bhttp::field::upgrade}) {
    message.erase(f);
  }
}

}  // namespace

std::string JoinedHeader(const HttpRequest& request, std::string_view name) {
  std::string joined;
  auto [begin, end] = request.equal_range(beast::string_view(name.data(), name.size()));
  for (auto it = begin; it != end; ++it) {
    if (!joined.empty()) joined += ", ";
    joined.append(it->value().data(), it->value().size());
  }
  return joined;
}

void PrepareUpstreamRequest(HttpRequest& request, const asio::ip::address& client_peer) {
  RemoveHopByHop(request);
  request.erase(bhttp::field::expect);  // the gateway already has the whole body
  std::string forwarded_for = JoinedHeader(request, "X-Forwarded-For");
  if (!forwarded_for.empty()) forwarded_for += ", ";
  forwarded_for += client_peer.to_string();
  request.set("X-Forwarded-For", forwarded_for);
  request.version(11);
  request.keep_alive(true);
  request.prepare_payload();
}

void PrepareClientResponse(HttpResponse& response, bool head) {
  RemoveHopByHop(response);
  if (!head) response.prepare_payload();  // a HEAD answer keeps the upstream's Content-Length
}

UpstreamPool::UpstreamPool(asio::io_context& io, config::UpstreamConfig config, size_t idle_max)
    : io_(io), config_(std::move(config)), idle_max_(idle_max) {}

size_t UpstreamPool::Idle() const { return idle_.size(); }

UpstreamPool::Stream UpstreamPool::TakeIdle() {
  if (idle_.empty()) return nullptr;
  Stream stream = std::move(idle_.back());
  idle_.pop_back();
  return stream;
}

void UpstreamPool::GiveBack(Stream stream) {
  stream->expires_never();  // an idle connection's old deadline must not close it in the pool
  if (idle_.size() < idle_max_) idle_.push_back(std::move(stream));
}

asio::awaitable<UpstreamPool::Stream> UpstreamPool::Connect(beast::error_code& ec) {
  tcp::resolver resolver(io_);
  auto endpoints =
      co_await resolver.async_resolve(config_.address.host, std::to_string(config_.address.port),
                                      asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return nullptr;
  auto stream = std::make_unique<beast::tcp_stream>(io_);
  stream->expires_after(config_.connect_timeout);
  co_await stream->async_connect(endpoints, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return nullptr;
  stream->socket().set_option(tcp::no_delay(true), ec);
  ec = {};
  co_return stream;
}

asio::awaitable<beast::error_code> UpstreamPool::Exchange(beast::tcp_stream& stream,
                                                          HttpRequest& request,
                                                          HttpResponse& response) {
  beast::error_code ec;
  stream.expires_after(config_.timeout);
  co_await bhttp::async_write(stream, request, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return ec;
  beast::flat_buffer buffer;
  for (;;) {
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(config_.max_response_bytes);
    if (request.method() == bhttp::verb::head) parser.skip(true);
    co_await bhttp::async_read(stream, buffer, parser,
                               asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return ec;
    response = parser.release();
    // Interim answers (100 Continue, 103 Early Hints) precede the real one; a switch of
    // protocols cannot be relayed.
    if (response.result() == bhttp::status::switching_protocols)
      co_return bhttp::error::bad_version;
    if (response.result_int() >= 200) break;
  }
  // Bytes past the response mean the upstream is out of step: never reuse that connection.
  if (buffer.size() != 0) response.keep_alive(false);
  co_return ec;
}

asio::awaitable<HttpResponse> UpstreamPool::Forward(HttpRequest request) {
  const unsigned client_version = request.version();
  // Pooled connections that turn out dead are dropped one by one; a new one ends the loop.
  for (;;) {
    beast::error_code ec;
    Stream stream = TakeIdle();
    const bool reused = stream != nullptr;
    if (!stream) {
      stream = co_await Connect(ec);
      if (!stream) {
        co_return MakeResponse(
            TimedOut(ec) ? bhttp::status::gateway_timeout : bhttp::status::bad_gateway,
            "upstream unreachable: " + ec.message() + "\n", "text/plain", client_version);
      }
    }
    HttpResponse response;
    ec = co_await Exchange(*stream, request, response);
    if (!ec) {
      if (response.keep_alive()) GiveBack(std::move(stream));
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
