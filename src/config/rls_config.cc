#include "config/rls_config.h"

#include <filesystem>
#include <limits>
#include <string>

#include "config/config.h"
#include "config/network.h"
#include "config/schema.h"

namespace sluice::config {
namespace {

// A duration gRPC takes as a channel argument: whole milliseconds in an int; `positive` refuses 0.
std::chrono::milliseconds GrpcDuration(const YamlField& f, bool positive) {
  const std::chrono::milliseconds d = f.Duration();
  if (positive && d.count() == 0) f.Fail("must be more than 0");
  if (d.count() > std::numeric_limits<int32_t>::max()) f.Fail("must be at most 24d");
  return d;
}

RlsKeepalive ParseRlsKeepalive(const YamlField& f) {
  f.ExpectMap(KeysOf("rls.keepalive"));
  RlsKeepalive keepalive;
  if (f.Has("time")) keepalive.time = GrpcDuration(f["time"], true);
  if (f.Has("timeout")) keepalive.timeout = GrpcDuration(f["timeout"], true);
  if (f.Has("min_client_ping_interval")) {
    keepalive.min_client_ping_interval = GrpcDuration(f["min_client_ping_interval"], false);
  }
  if (f.Has("max_connection_age")) {
    keepalive.max_connection_age = GrpcDuration(f["max_connection_age"], false);
  }
  if (f.Has("max_connection_age_grace")) {
    keepalive.max_connection_age_grace = GrpcDuration(f["max_connection_age_grace"], false);
  }
  return keepalive;
}

// `response_headers: {limit, remaining, reset}`: the names of the headers, each defaulted.
RlsHeaderNames ParseRlsHeaderNames(const YamlField& headers) {
  headers.ExpectMap(KeysOf("rls.response_headers"));
  RlsHeaderNames names;
  if (headers.Has("limit")) names.limit = headers["limit"].String();
  if (headers.Has("remaining")) names.remaining = headers["remaining"].String();
  if (headers.Has("reset")) names.reset = headers["reset"].String();
  return names;
}

RlsFailure ParseRlsFailure(const YamlField& f) {
  const std::string choice = f.OneOf({"open", "closed", "error"});
  return choice == "open"     ? RlsFailure::kOpen
         : choice == "closed" ? RlsFailure::kClosed
                              : RlsFailure::kError;
}

// `listen`, `json_listen` (at least one) and `config`: where the service is served, and its
// descriptor files. Relative descriptor paths are taken from the configuration file's folder,
// so that the file and its descriptors move together.
void ParseRlsServing(const YamlField& f, const std::string& source, RlsConfig& rls) {
  if (f.Has("listen")) rls.listen = f["listen"].Require(ParseEndpoint(f["listen"].String()));
  if (f.Has("json_listen")) {
    rls.json_listen = f["json_listen"].Require(ParseEndpoint(f["json_listen"].String()));
  }
  if (!rls.listen && !rls.json_listen) f.Fail("needs listen, json_listen or both");
  if (!f.Has("config")) f.Fail("needs config: descriptor files or folders");
  const std::filesystem::path base = std::filesystem::path(source).parent_path();
  f["config"].ForEach(
      [&](const YamlField& path) { rls.config.push_back((base / path.String()).string()); });
  if (rls.config.empty()) f["config"].Fail("needs at least one file or folder");
}

// The bounds on messages, streams and calls in flight.
void ParseRlsBounds(const YamlField& f, RlsConfig& rls) {
  if (f.Has("max_message_bytes")) {
    rls.max_message_bytes = static_cast<size_t>(
        f["max_message_bytes"].Integer(1024, std::numeric_limits<int32_t>::max()));
  }
  if (f.Has("max_concurrent_streams")) {
    rls.max_concurrent_streams =
        static_cast<uint32_t>(f["max_concurrent_streams"].Integer(1, 1'000'000));
  }
  if (f.Has("max_calls_in_flight")) {
    rls.max_calls_in_flight = static_cast<size_t>(f["max_calls_in_flight"].Integer(1, 10'000'000));
  }
}

}  // namespace

size_t ParseOverLimitCacheKeys(const YamlField& cache, std::string_view section) {
  cache.ExpectMap(KeysOf(section));
  return cache.Has("max_keys") ? static_cast<size_t>(cache["max_keys"].Integer(1, 100'000'000))
                               : 100'000;
}

RlsConfig ParseRls(const YamlField& f, const std::string& source, FailurePolicy failure) {
  f.ExpectMap(KeysOf("rls"));
  RlsConfig rls;
  rls.failure = failure == FailurePolicy::kOpen ? RlsFailure::kOpen : RlsFailure::kClosed;
  ParseRlsServing(f, source, rls);
  if (f.Has("failure")) rls.failure = ParseRlsFailure(f["failure"]);
  if (f.Has("response_headers")) rls.response_headers = ParseRlsHeaderNames(f["response_headers"]);
  if (f.Has("policy")) rls.policy = f["policy"].Require(ParsePolicy(f["policy"].String()));
  if (f.Has("over_limit_cache")) {
    rls.over_limit_cache_keys =
        ParseOverLimitCacheKeys(f["over_limit_cache"], "rls.over_limit_cache");
  }
  if (f.Has("quota_mode")) rls.quota_mode = f["quota_mode"].Bool();
  if (f.Has("near_limit_ratio")) rls.near_limit_ratio = f["near_limit_ratio"].Fraction(0, 1);
  ParseRlsBounds(f, rls);
  if (f.Has("keepalive")) rls.keepalive = ParseRlsKeepalive(f["keepalive"]);
  return rls;
}

}  // namespace sluice::config
