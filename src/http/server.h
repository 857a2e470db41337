// An HTTP/1.1 server on Boost.Beast: one coroutine per connection, keep-alive, a timeout on
// every read and write, and limits on the size of what a client may send.
#pragma once

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "config/network.h"
#include "http/client_address.h"
#include "http/event_loops.h"
#include "http/field_allocator.h"
#include "sluice/clock.h"
#include "sluice/status.h"

namespace sluice::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using HttpRequest = beast::http::request<beast::http::string_body, Fields>;
using HttpResponse = beast::http::response<beast::http::string_body, Fields>;

// The HTTP front ends name their event loop's executor exactly: Asio's default, any_io_executor,
// erases its type and pays for that on every operation, several times a request.
using Executor = asio::io_context::executor_type;
template <typename T>
using Awaitable = asio::awaitable<T, Executor>;
inline constexpr asio::use_awaitable_t<Executor> kUseAwaitable{};
using Socket = asio::basic_stream_socket<tcp, Executor>;

// Answers one request; `peer` is the connection's direct peer (it outlives the answer), `loop`
// the index of the event loop the connection lives on (and the handler runs on).
using Handler =
    std::function<Awaitable<HttpResponse>(HttpRequest request, const Peer& peer, size_t loop)>;

struct ServerLimits {
  size_t max_header_bytes = size_t{16} * 1024;
  size_t max_body_bytes = size_t{10} * 1024 * 1024;
  std::chrono::milliseconds header_timeout{10'000};  // to receive a request's head, then its body
  std::chrono::milliseconds idle_timeout{60'000};    // between requests on a kept-alive connection
  std::chrono::milliseconds write_timeout{30'000};
  size_t max_connections = 4096;  // connections past this are closed at once
};

// Listens on one endpoint and serves each connection with `handler`, on the event loops in turn.
// Malformed requests get 400, oversized headers 431, oversized bodies 413, and the connection
// ends after each of them; a client too slow to send a request's head (from its first byte on a
// kept-alive connection) or then its body, each within the header timeout, is disconnected. A
// connection that ends after an answer is shut for sending, and what the client still sends is
// read and dropped for up to 2 s, so that a reset does not overtake the answer.
class Server {
 public:
  // Accepts on the first loop; `loops` must outlive the server's connections. `clock` (the
  // process's steady clock when null) times the connections' deadlines.
  Server(EventLoops& loops, Handler handler, ServerLimits limits,
         std::shared_ptr<const Clock> clock = nullptr);
  ~Server();

  // Binds and starts accepting; fails when the address cannot be bound.
  Status Listen(const config::Endpoint& endpoint);

  // The port actually bound (useful when listening on port 0).
  uint16_t port() const;

  // Stops accepting; connections finish the request in hand and close.
  void StopAccepting();

  // Once drained: a request that begins from now on is answered 503 and its connection closed,
  // never handled, since the loops may stop before it could end. A request that began before
  // (counted in InFlight, which a caller reads after this) is handled as usual.
  void Close();

  // Connections open now.
  size_t Connections() const;

  // Requests being handled now.
  size_t InFlight() const;

  // Times accepting paused because the process was out of file descriptors.
  uint64_t AcceptPauses() const;

  struct State;  // shared with the connections' coroutines

 private:
  std::shared_ptr<State> state_;
};

// A response with `status`, a plain-text or JSON body, and Content-Length set.
HttpResponse MakeResponse(beast::http::status status, std::string body,
                          std::string_view content_type = "text/plain; charset=utf-8",
                          unsigned version = 11, bool keep_alive = true);

}  // namespace sluice::http
