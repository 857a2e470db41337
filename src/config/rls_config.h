// The `rls:` block of the configuration: Envoy's rate limit service API, served beside (or
// instead of) the gateway, on descriptor files in envoyproxy/ratelimit's format.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/network.h"

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

  bool operator==(const RlsConfig&) const = default;
};

}  // namespace sluice::config
