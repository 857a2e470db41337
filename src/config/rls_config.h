// The `rls:` block of the configuration: Envoy's rate limit service API, served beside (or
// instead of) the gateway, on descriptor files in envoyproxy/ratelimit's format.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/network.h"
#include "config/yaml_field.h"
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

// How the gRPC server keeps its connections alive and bounds their lives: gRPC core's keepalive
// channel arguments, named as grpc-go names them. A duration of 0 in max_connection_age is never.
struct RlsKeepalive {
  // A connection gets a ping this long after its last ping, with or without calls, and is closed
  // when the ping is not acknowledged within `timeout`: a vanished client is forgotten.
  std::chrono::milliseconds time{60'000};
  std::chrono::milliseconds timeout{20'000};
  // Each ping a client sends sooner than this after its last one, while the server sends it
  // nothing, is a strike; at the third, GOAWAY (ENHANCE_YOUR_CALM, "too_many_pings") and the
  // connection is closed.
  std::chrono::milliseconds min_client_ping_interval{10'000};
  // A connection older than this is sent GOAWAY; its calls then get `max_connection_age_grace`
  // before it is closed, so that no stream lives for ever.
  std::chrono::milliseconds max_connection_age{30 * 60'000};
  std::chrono::milliseconds max_connection_age_grace{10'000};

  bool operator==(const RlsKeepalive&) const = default;
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
  // The largest RateLimitRequest taken, in bytes: a larger gRPC message is refused by gRPC
  // (RESOURCE_EXHAUSTED), a larger /json body with 413.
  size_t max_message_bytes = size_t{1} << 20;
  // Streams (calls) open at once on one gRPC connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS).
  uint32_t max_concurrent_streams = 100;
  // Calls waiting for the store at once, over gRPC and /json together; a call past it is
  // refused at once (RESOURCE_EXHAUSTED, /json 503) rather than queued. Reloadable.
  size_t max_calls_in_flight = 10'000;
  RlsKeepalive keepalive;

  bool operator==(const RlsConfig&) const = default;
};

// `rls: {listen, json_listen, config, ...}`; `source` names the configuration file, whose folder
// relative descriptor paths are taken from; `failure` is the top-level `failure`, the default.
RlsConfig ParseRls(const YamlField& f, const std::string& source, FailurePolicy failure);

// `over_limit_cache: {max_keys: N}` or `{}` (the gateway's and the service's, `section` naming
// which in the schema): how many buckets an over-limit cache remembers at most.
size_t ParseOverLimitCacheKeys(const YamlField& cache, std::string_view section);

}  // namespace sluice::config
