// The `rls:` block of the configuration: Envoy's rate limit service API, served beside (or
// instead of) the gateway, on descriptor files in envoyproxy/ratelimit's format.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "config/network.h"
#include "sluice/limiter.h"

namespace sluice::config {

// What a ShouldRateLimit call answers when the store fails or does not answer in time.
enum class RlsFailure {
  kOpen,    // every descriptor OK
  kClosed,  // every limited descriptor OVER_LIMIT
  kError,   // the gRPC error UNAVAILABLE, so that Envoy's failure_mode_deny decides
};

// The names of the response headers that describe a response's tightest descriptor.
struct RlsHeaderNames {
  std::string limit = "RateLimit-Limit";
  std::string remaining = "RateLimit-Remaining";
  std::string reset = "RateLimit-Reset";

  bool operator==(const RlsHeaderNames&) const = default;
};

struct RlsConfig {
  std::optional<Endpoint> listen;       // gRPC: RateLimitService and grpc.health.v1.Health
  std::optional<Endpoint> json_listen;  // HTTP: POST /json
  // Descriptor files, and folders of them, relative paths resolved against the configuration
  // file's folder.
  std::vector<std::string> config;
  RlsFailure failure = RlsFailure::kOpen;          // by default, the top-level `failure`
  std::optional<RlsHeaderNames> response_headers;  // none: no headers added
  // What a call's other descriptors are charged when one is over its limit; charge-all, as
  // envoyproxy/ratelimit, whatever the gateway's `policy` says.
  MultiRulePolicy policy = MultiRulePolicy::kChargeAll;
  // Buckets known to be in debt answered OVER_LIMIT without a store call until they are out of
  // it, at most this many remembered; 0: off.
  size_t over_limit_cache_keys = 0;
  bool quota_mode = false;  // every limit in quota mode
  // A limit's hits count as near it once more than this share of it is used
  // (sluice_rls_near_limit_total), as envoyproxy/ratelimit's NEAR_LIMIT_RATIO.
  double near_limit_ratio = 0.8;

  bool operator==(const RlsConfig&) const = default;
};

}  // namespace sluice::config
