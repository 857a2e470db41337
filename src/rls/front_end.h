// Envoy's rate limit service inside `sluice serve`: the descriptor files the `rls:` block names,
// the service on the gateway's stores, and its gRPC and JSON servers.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "http/event_loops.h"
#include "http/server.h"
#include "rls/grpc_server.h"
#include "rls/service.h"
#include "sluice/status.h"
#include "sluice/store.h"

namespace sluice::rls {

// Loads and indexes the descriptor files of `rls`.
Result<std::shared_ptr<const DescriptorMatcher>> LoadMatcher(const config::RlsConfig& rls);

class FrontEnd {
 public:
  // Loads the descriptor files of `config.rls` (which must be set); fails on a bad one.
  // `top_rejected`, when given, counts the descriptor values over their limits.
  static Result<std::unique_ptr<FrontEnd>> Create(
      const config::Config& config, std::vector<std::shared_ptr<Store>> stores,
      std::shared_ptr<http::TopRejected> top_rejected = nullptr);

  // Starts the gRPC server and, on `loops`, the JSON server, as the configuration asks; the JSON
  // server takes `limits` but rls.max_message_bytes for bodies, and the gRPC server gives a
  // connection the header timeout to send HTTP/2's preface and settings.
  Status Listen(const config::RlsConfig& rls, http::EventLoops& loops, http::ServerLimits limits);

  // Puts descriptors loaded by LoadMatcher, and the options of `config`, in force.
  void Reconfigure(std::shared_ptr<const DescriptorMatcher> matcher, const config::Config& config);

  // Stops taking calls; calls in flight get `timeout`.
  void BeginDrain(std::chrono::milliseconds timeout);

  // Once drained: HTTP JSON calls that begin from now on are refused (http::Server::Close);
  // gRPC refuses new calls from BeginDrain on.
  void Close();

  size_t InFlight() const;

  // The service's counters in Prometheus's text format, for the admin listener's /metrics.
  std::string MetricsText() const;

  // Whether, after BeginDrain, gRPC's shutdown has ended: every call it took has been answered,
  // those it took but had yet to hand over included. Until then the loops must run, or such a
  // call is never answered and gRPC's shutdown waits for it for ever.
  bool ShutDown() const;

 private:
  FrontEnd() = default;

  // The service's options in `config`; keeps the over-limit cache's contents while its size
  // stays the same.
  ServiceOptions OptionsOf(const config::Config& config);

  std::shared_ptr<OverLimitCache> over_limit_cache_;
  size_t cache_keys_ = 0;
  std::shared_ptr<http::TopRejected> top_rejected_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<GrpcServer> grpc_;
  std::unique_ptr<http::Server> json_;
};

}  // namespace sluice::rls
