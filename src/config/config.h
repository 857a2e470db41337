// The configuration of `sluice serve`: one YAML file, validated whole before anything starts.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/network.h"
#include "config/quota_store_config.h"
#include "config/rls_config.h"
#include "config/rules_config.h"
#include "config/store_config.h"
#include "sluice/headers.h"
#include "sluice/limiter.h"
#include "sluice/rule.h"
#include "sluice/status.h"

namespace sluice::config {

// Where requests go once they pass.
struct UpstreamConfig {
  Endpoint address;
  size_t pool = 64;  // most idle keep-alive connections kept to the upstream
  std::chrono::milliseconds connect_timeout{1000};
  std::chrono::milliseconds timeout{30000};              // for the whole upstream exchange
  std::chrono::milliseconds idle_timeout{60000};         // a pooled connection's, then closed
  size_t max_response_bytes = size_t{64} * 1024 * 1024;  // larger bodies become 502

  bool operator==(const UpstreamConfig&) const = default;
};

// How a request's client is identified.
struct ClientConfig {
  // The forwarding header is believed only from peers in these networks.
  std::vector<Network> trusted_proxies;
  // Which header they write; the other is ignored, since a client could write it itself.
  ForwardingHeader forwarding_header = ForwardingHeader::kXForwardedFor;
  std::string api_key_header = "X-Api-Key";
  // Names the tenant when the API key is not in `tenants`; empty: no such header.
  std::string tenant_header;
};

// `debug_top`: the values each rule rejects most, for the admin listener (/debug/top, the status
// page).
struct DebugTopConfig {
  size_t size = 20;          // values shown per rule or limit; 0 records nothing
  bool reveal_keys = false;  // API keys, header values and descriptor values shown whole

  bool operator==(const DebugTopConfig&) const = default;
};

// The optional access log: a line per request, written off the request path.
struct AccessLogConfig {
  enum class Format { kJson, kText };
  std::string path;
  Format format = Format::kJson;
  // Lines waiting for the writer at most; more are dropped (and counted) rather than wait.
  size_t buffer_lines = 65536;

  bool operator==(const AccessLogConfig&) const = default;
};

struct Config {
  std::string source;  // the file it came from, for messages
  Endpoint listen{"0.0.0.0", 8080};
  std::optional<Endpoint> check_listen;
  Endpoint admin_listen{"127.0.0.1", 9901};
  unsigned threads = 0;  // 0: the number of cores
  UpstreamConfig upstream;
  // False when the file has no `upstream` (Envoy's rate limit service alone): no proxy runs.
  bool proxy = true;
  StoreConfig store;
  FailurePolicy failure = FailurePolicy::kOpen;
  std::optional<QuotaStoreConfig> quota_store;  // where durable rules count, when any is
  MultiRulePolicy policy = MultiRulePolicy::kChargeAll;
  HeaderStyles headers;
  ClientConfig client;
  std::map<std::string, std::string, std::less<>> tenants;  // API key -> tenant
  std::string key_prefix = "rl:";
  bool hash_tag_values = false;  // keys "rl:<bucket>:{<value>}": one cluster slot per value
  size_t max_body_bytes = size_t{10} * 1024 * 1024;
  size_t max_header_bytes = size_t{16} * 1024;
  std::chrono::milliseconds header_timeout{10000};  // to receive a request's headers
  std::chrono::milliseconds drain_timeout{10000};   // on SIGTERM, for requests in flight
  size_t max_connections = 4096;     // per listener; more are closed as soon as accepted
  size_t over_limit_cache_keys = 0;  // 0: no over-limit cache
  // A rule's tokens count as near its limit once more than this share of its capacity is used
  // (sluice_near_limit_total).
  double near_limit_ratio = 0.8;
  std::optional<AccessLogConfig> access_log;  // none: no access log
  std::vector<Rule> rules;
  std::optional<RlsConfig> rls;  // Envoy's rate limit service API, when configured
  DebugTopConfig debug_top;
  // The YAML text of each field compared by text on reload (schema.h's ComparedByText), by its
  // path: "store.url" -> "redis://...". Held for comparison alone: never shown or logged.
  std::map<std::string, std::string, std::less<>> field_texts;
};

// The names the configuration and the command line give each choice: "charge-all",
// "stop-at-first", "refund"; "open", "closed". Anything else is refused
// with a message that lists the names.
Result<MultiRulePolicy> ParsePolicy(std::string_view name);
Result<FailurePolicy> ParseFailurePolicy(std::string_view name);

// The limiter options `config` asks for, with a new over-limit cache when it asks for one (the
// limiters of one configuration share it); no quota store (the caller opens it once for all).
LimiterOptions LimiterOptionsOf(const Config& config);

// Parses and validates `yaml`; errors read "SOURCE:LINE: FIELD: what is wrong".
Result<Config> ParseConfig(std::string_view yaml, std::string_view source);

// Reads and parses the file at `path`.
Result<Config> LoadConfig(const std::string& path);

}  // namespace sluice::config
