// The gRPC front end: envoy.service.ratelimit.v3.RateLimitService and the standard health
// service (grpc.health.v1.Health) on one port, on grpc++'s callback API, so that no gRPC thread
// waits for the store.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

#include "config/rls_config.h"
#include "rls/service.h"
#include "sluice/status.h"

namespace grpc {
class Server;
}

namespace sluice::rls {

class GrpcServer {
 public:
  // Listens on `rls.listen` (which must be set) and answers with `service`, which must outlive
  // the server. Messages, streams and connections are bounded as `rls` says (its
  // max_message_bytes, max_concurrent_streams and keepalive); a connection that has not sent
  // HTTP/2's preface and settings within `handshake_timeout` is closed.
  static Result<std::unique_ptr<GrpcServer>> Start(const config::RlsConfig& rls,
                                                   std::chrono::milliseconds handshake_timeout,
                                                   Service& service);
  // Shuts down (if BeginShutdown did not) and waits for every call to end.
  ~GrpcServer();
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  uint16_t port() const { return port_; }

  // Health turns NOT_SERVING, new calls are refused, and calls in flight get until `deadline`,
  // on a thread of its own: the calls may need the caller's thread to finish.
  void BeginShutdown(std::chrono::system_clock::time_point deadline);

  // Whether the shutdown BeginShutdown began has ended: every call gRPC took has been answered,
  // including those it took after BeginShutdown and before it refused new ones.
  bool ShutDown() const { return shut_down_; }

  struct Handlers;  // the callback service

 private:
  GrpcServer(std::unique_ptr<Handlers> handlers, std::unique_ptr<grpc::Server> server,
             uint16_t port);

  std::unique_ptr<Handlers> handlers_;
  std::unique_ptr<grpc::Server> server_;
  uint16_t port_;
  std::thread shutdown_;
  std::atomic<bool> shut_down_{false};
};

// The gRPC status code for a Sluice status: kInvalidArgument is INVALID_ARGUMENT, a deadline
// DEADLINE_EXCEEDED, kResourceExhausted (too many calls in flight) RESOURCE_EXHAUSTED, other
// store failures UNAVAILABLE.
int GrpcCode(const Status& status);

}  // namespace sluice::rls
