// The service behind the gateway: a pool of keep-alive connections, and the forwarding of one
// request over it with hop-by-hop headers handled as RFC 9110 says.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "http/deadline.h"
#include "http/server.h"

namespace sluice::http {

// Connections to the upstream from one event loop. Idle ones are kept (up to `idle_max`) and
// reused, and closed once idle for the configuration's idle_timeout. Not thread-safe: only the
// loop's own thread uses it.
class UpstreamPool {
 public:
  // `clock` (the process's steady clock when null) times the exchanges and the idle connections.
  UpstreamPool(asio::io_context& io, config::UpstreamConfig config, size_t idle_max,
               std::shared_ptr<const Clock> clock = nullptr);
  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  // Sends `request` and returns the upstream's response, or 502 (cannot connect, broken
  // response, a body over max_response_bytes) or 504 (no answer within the timeout). For idempotent
  // methods, a pooled connection that turns out to be closed is dropped and the request tried on
  // the next one, or on a new connection; other methods go only on a pooled connection the
  // upstream has not closed, or on a new one. `request` must outlive the wait (it is not copied:
  // a coroutine's parameters take room in its frame).
  Awaitable<HttpResponse> Forward(const HttpRequest& request);

  size_t Idle() const;

 private:
  // A connection to the upstream, with the memory its messages are read into and written from,
  // kept with it from request to request.
  struct Connection {
    Connection(asio::io_context& io, std::shared_ptr<const Clock> clock)
        : socket(io), deadline(socket, std::move(clock)) {}
    Socket socket;
    SocketDeadline<Socket> deadline;
    Clock::TimePoint idle_since;  // when it went back to the pool
    beast::flat_buffer buffer;
    std::string head;
  };
  using ConnectionPtr = std::unique_ptr<Connection>;

  Awaitable<beast::error_code> Exchange(Connection& connection, const HttpRequest& request,
                                        HttpResponse& response);
  Awaitable<ConnectionPtr> Connect(beast::error_code& ec);
  // The most recently used idle connection; when `checked`, or when it has been idle a while,
  // only one still open at the other end with nothing unasked waiting on it.
  ConnectionPtr TakeIdle(bool checked);
  void GiveBack(ConnectionPtr connection);
  // Closes the connections idle for idle_timeout, and sets the reaper for the next one to be.
  void Reap();

  asio::io_context& io_;
  const std::shared_ptr<const Clock> clock_;
  const config::UpstreamConfig config_;
  const size_t idle_max_;
  std::vector<ConnectionPtr> idle_;  // the most recently returned last
  BasicClockTimer<Executor> reaper_;
  bool reaping_ = false;                                    // whether the reaper is set
  std::shared_ptr<void> alive_ = std::make_shared<char>();  // expires with the pool
};

// Readies a client's request for the upstream: removes hop-by-hop headers (Connection, the
// headers it names, Keep-Alive, Proxy-Connection, TE, Trailer, Transfer-Encoding, Upgrade) and
// Expect, appends `client_peer` to X-Forwarded-For, asks for keep-alive, and gives a request
// without Host (HTTP/1.0 allows it) `upstream_authority`, since the HTTP/1.1 it goes as needs one.
void PrepareUpstreamRequest(HttpRequest& request, const Peer& client_peer,
                            std::string_view upstream_authority);

// Readies the upstream's response for the client: removes its hop-by-hop headers and frames
// the body (but for a response to HEAD or a 304, whose Content-Length describes a body not sent,
// and a 204, which has none).
void PrepareClientResponse(HttpResponse& response, bool head);

// All the values of a header that may come on several lines, joined with ", ".
std::string JoinedHeader(const HttpRequest& request, std::string_view name);

}  // namespace sluice::http
