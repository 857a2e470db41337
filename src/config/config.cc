#include "config/config.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <set>
#include <sstream>
#include <thread>

#include "config/quota_store_config.h"
#include "config/yaml_field.h"

namespace sluice::config {
namespace {

UpstreamConfig ParseUpstream(const YamlField& f) {
  f.ExpectMap(
      {"address", "pool", "connect_timeout", "timeout", "idle_timeout", "max_response_bytes"});
  UpstreamConfig upstream;
  if (!f.Has("address")) f.Fail("needs an address (host:port)");
  upstream.address = f["address"].Check(ParseEndpoint(f["address"].String()));
  if (f.Has("pool")) upstream.pool = static_cast<size_t>(f["pool"].Integer(1, 100'000));
  if (f.Has("connect_timeout")) upstream.connect_timeout = f["connect_timeout"].Duration();
  if (f.Has("timeout")) upstream.timeout = f["timeout"].Duration();
  if (f.Has("idle_timeout")) {
    upstream.idle_timeout = f["idle_timeout"].Duration();
    if (upstream.idle_timeout.count() == 0) f["idle_timeout"].Fail("must be more than 0");
  }
  if (f.Has("max_response_bytes")) {
    upstream.max_response_bytes =
        static_cast<size_t>(f["max_response_bytes"].Integer(0, int64_t{1} << 34));
  }
  return upstream;
}

// The store fields each type takes, beside `type`.
struct StoreFields {
  const char* type;
  std::vector<std::string_view> fields;
};
const std::vector<std::string_view> kAllStoreFields = {"type",
                                                       "url",
                                                       "nodes",
                                                       "sentinels",
                                                       "master",
                                                       "db",
                                                       "username",
                                                       "password",
                                                       "password_file",
                                                       "sentinel_username",
                                                       "sentinel_password",
                                                       "sentinel_password_file",
                                                       "tls",
                                                       "mode",
                                                       "layout",
                                                       "timeout",
                                                       "connect_timeout",
                                                       "max_in_flight",
                                                       "refresh_interval",
                                                       "max_buckets"};
const StoreFields kStoreFields[] = {
    {"memory", {"max_buckets"}},
    {"redis",
     {"url", "username", "password", "password_file", "tls", "mode", "layout", "timeout",
      "connect_timeout", "max_in_flight", "max_buckets"}},
    {"sentinel",
     {"sentinels", "master", "db", "username", "password", "password_file", "sentinel_username",
      "sentinel_password", "sentinel_password_file", "tls", "mode", "layout", "timeout",
      "connect_timeout", "max_in_flight", "max_buckets"}},
    {"cluster",
     {"nodes", "username", "password", "password_file", "tls", "mode", "layout", "timeout",
      "connect_timeout", "max_in_flight", "refresh_interval", "max_buckets"}},
};

// Refuses a field that `type` does not take, naming the types that do.
void RefuseForeignFields(const YamlField& f, std::string_view type) {
  for (std::string_view field : kAllStoreFields) {
    const std::string name(field);
    if (field == "type" || !f.Has(name)) continue;
    std::vector<std::string> takers;
    for (const StoreFields& kind : kStoreFields) {
      if (std::find(kind.fields.begin(), kind.fields.end(), field) != kind.fields.end()) {
        takers.emplace_back(kind.type);
      }
    }
    if (std::find(takers.begin(), takers.end(), type) != takers.end()) continue;
    std::string list;
    for (size_t i = 0; i < takers.size(); ++i) {
      list += (i == 0 ? "" : i + 1 == takers.size() ? " or " : ", ") + takers[i];
    }
    f[name].Fail("applies only to a " + list + " store");
  }
}

TlsOptions ParseTls(const YamlField& f) {
  TlsOptions tls;
  if (f.node().IsNull()) return tls;  // `tls:` alone: TLS with the defaults
  f.ExpectMap({"ca_file", "cert_file", "key_file", "server_name", "verify"});
  if (f.Has("ca_file")) tls.ca_file = f["ca_file"].String();
  if (f.Has("cert_file")) tls.cert_file = f["cert_file"].String();
  if (f.Has("key_file")) tls.key_file = f["key_file"].String();
  if (f.Has("server_name")) tls.server_name = f["server_name"].String();
  if (f.Has("verify")) tls.verify = f["verify"].Bool();
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    f[tls.cert_file.empty() ? "key_file" : "cert_file"].Fail("cert_file and key_file go together");
  }
  return tls;
}

// `username`, and `password` or `password_file` (never both, and never beside credentials in
// the URL: one source for each, so that none silently wins).
void ParseCredentials(const YamlField& f, const char* prefix, std::string& username,
                      std::string& password, std::string& password_file) {
  const std::string user_field = std::string(prefix) + "username";
  const std::string password_field = std::string(prefix) + "password";
  const std::string file_field = std::string(prefix) + "password_file";
  if (f.Has(user_field)) {
    if (!username.empty()) f[user_field].Fail("is given twice: in the url and here");
    username = f[user_field].String();
  }
  if (f.Has(password_field) && f.Has(file_field)) {
    f[file_field].Fail("is given beside " + password_field + "; give one of them");
  }
  for (const std::string& field : {password_field, file_field}) {
    if (f.Has(field) && !password.empty()) f[field].Fail("is given twice: in the url and here");
  }
  if (f.Has(password_field)) password = f[password_field].String();
  if (f.Has(file_field)) {
    password_file = f[file_field].String();
    if (password_file.empty()) f[file_field].Fail("must name a file");
  }
}

// The fields every store on Redis shares.
template <typename Options>
void ParseTimings(const YamlField& f, Options& options) {
  if (f.Has("mode")) options.mode = f["mode"].Check(ParseScriptMode(f["mode"].String()));
  if (f.Has("layout")) {
    options.layout = f["layout"].OneOf({"hash", "compact"}) == "compact" ? BucketLayout::kCompact
                                                                         : BucketLayout::kHash;
  }
  if (f.Has("timeout")) options.timeout = f["timeout"].Duration();
  if (f.Has("connect_timeout")) options.connect_timeout = f["connect_timeout"].Duration();
  if (f.Has("max_in_flight")) {
    options.max_in_flight = static_cast<size_t>(f["max_in_flight"].Integer(1, 10'000'000));
  }
  if (options.timeout.count() == 0) f["timeout"].Fail("must be more than 0");
  if (options.connect_timeout.count() == 0) f["connect_timeout"].Fail("must be more than 0");
}

std::vector<HostPort> ParseAddresses(const YamlField& f, const char* what) {
  std::vector<HostPort> addresses;
  f.ForEach([&](const YamlField& node) {
    addresses.push_back(node.Check(ParseHostPort(node.String())));
  });
  if (addresses.empty()) f.Fail(std::string("needs at least one ") + what + " (host:port)");
  return addresses;
}

ClusterOptions ParseCluster(const YamlField& f) {
  if (!f.Has("nodes")) f.Fail("a cluster store needs nodes: [host:port, ...]");
  ClusterOptions cluster;
  cluster.seeds = ParseAddresses(f["nodes"], "node");
  ParseCredentials(f, "", cluster.username, cluster.password, cluster.password_file);
  if (f.Has("tls")) cluster.tls = ParseTls(f["tls"]);
  ParseTimings(f, cluster);
  if (f.Has("refresh_interval")) cluster.refresh_interval = f["refresh_interval"].Duration();
  if (cluster.refresh_interval.count() == 0) f["refresh_interval"].Fail("must be more than 0");
  return cluster;
}

RedisOptions ParseRedis(const YamlField& f) {
  if (!f.Has("url")) {
    f.Fail("a redis store needs a url (redis://, rediss:// or unix://; see docs/configuration.md)");
  }
  const YamlField url = f["url"];
  RedisOptions redis = url.Check(ParseRedisUrl(url.String()));
  if (redis.sentinel) url.Fail("a sentinel:// URL goes with type: sentinel");
  ParseCredentials(f, "", redis.username, redis.password, redis.password_file);
  if (f.Has("tls")) {
    if (!redis.tls) f["tls"].Fail("applies to rediss:// URLs (TLS); this url is not one");
    redis.tls = ParseTls(f["tls"]);
  }
  ParseTimings(f, redis);
  return redis;
}

RedisOptions ParseSentinel(const YamlField& f) {
  for (const char* required : {"sentinels", "master"}) {
    if (!f.Has(required)) f.Fail(std::string("a sentinel store needs ") + required);
  }
  RedisOptions redis;
  SentinelOptions sentinel;
  sentinel.sentinels = ParseAddresses(f["sentinels"], "sentinel");
  sentinel.master = f["master"].String();
  if (sentinel.master.empty()) f["master"].Fail("must not be empty");
  if (f.Has("db")) redis.db = static_cast<int>(f["db"].Integer(0, 1'000'000));
  ParseCredentials(f, "", redis.username, redis.password, redis.password_file);
  ParseCredentials(f, "sentinel_", sentinel.username, sentinel.password, sentinel.password_file);
  if (f.Has("tls")) redis.tls = ParseTls(f["tls"]);
  ParseTimings(f, redis);
  redis.sentinel = std::move(sentinel);
  return redis;
}

StoreConfig ParseStore(const YamlField& f) {
  f.ExpectMap(kAllStoreFields);
  StoreConfig store;
  const std::string type =
      f.Has("type") ? f["type"].OneOf({"memory", "redis", "sentinel", "cluster"}) : "memory";
  RefuseForeignFields(f, type);
  if (f.Has("max_buckets")) {
    store.max_buckets = static_cast<size_t>(f["max_buckets"].Integer(1, 1'000'000'000));
  }
  if (type == "cluster") {
    store.type = StoreType::kCluster;
    store.cluster = ParseCluster(f);
  } else if (type == "redis") {
    store.type = StoreType::kRedis;
    store.redis = ParseRedis(f);
  } else if (type == "sentinel") {
    store.type = StoreType::kSentinel;
    store.redis = ParseSentinel(f);
  }
  return store;
}

ClientConfig ParseClient(const YamlField& f) {
  f.ExpectMap({"trusted_proxies", "forwarding_header", "api_key_header", "tenant_header"});
  ClientConfig client;
  if (f.Has("forwarding_header")) {
    client.forwarding_header =
        f["forwarding_header"].OneOf({"x-forwarded-for", "forwarded"}) == "forwarded"
            ? ForwardingHeader::kForwarded
            : ForwardingHeader::kXForwardedFor;
  }
  if (f.Has("trusted_proxies")) {
    f["trusted_proxies"].ForEach([&](const YamlField& cidr) {
      client.trusted_proxies.push_back(cidr.Check(Network::Parse(cidr.String())));
    });
  }
  if (f.Has("api_key_header")) client.api_key_header = f["api_key_header"].String();
  if (f.Has("tenant_header")) client.tenant_header = f["tenant_header"].String();
  return client;
}

HeaderStyles ParseHeaders(const YamlField& f) {
  HeaderStyles styles{false, false};
  f.ForEach([&](const YamlField& h) {
    (h.OneOf({"ietf", "x-ratelimit"}) == "ietf" ? styles.ietf : styles.x_ratelimit) = true;
  });
  return styles;
}

// `key:` names the attribute a rule counts by: ip, key, tenant, or header:NAME.
std::string ParseRuleKey(const YamlField& f) {
  std::string key = f.String();
  if (key == "ip" || key == "key" || key == "tenant" ||
      (key.starts_with("header:") && key.size() > 7)) {
    return key;
  }
  f.Fail("\"" + key + "\" is not one of ip | key | tenant | header:NAME");
}

// A calendar period (a durable rule's) is kept as its longest length.
Limit ParseLimit(const YamlField& f, Limit base, CalendarPeriod calendar = CalendarPeriod::kNone) {
  if (f.Has("capacity")) base.capacity = f["capacity"].Integer(1, Limit::kMaxCapacity);
  base.tokens = f.Has("tokens") ? f["tokens"].Integer(1, Limit::kMaxCapacity) : base.capacity;
  if (calendar != CalendarPeriod::kNone) {
    base.period_ms = LongestPeriodMs(calendar);
  } else if (f.Has("period")) {
    base.period_ms = f["period"].Duration().count();
  }
  return base;
}

// `counting`, `sync_interval` and `lease` of a rule.
void ParseCounting(const YamlField& f, LocalCounting& counting) {
  if (f.Has("counting")) {
    const std::string mode = f["counting"].OneOf({"shared", "synced", "leased"});
    counting.mode = mode == "synced"   ? Counting::kSynced
                    : mode == "leased" ? Counting::kLeased
                                       : Counting::kShared;
  }
  if (f.Has("sync_interval")) {
    if (counting.mode != Counting::kSynced) f["sync_interval"].Fail("needs counting: synced");
    counting.sync_interval_ms = f["sync_interval"].Duration().count();
  }
  if (f.Has("lease")) {
    YamlField lease = f["lease"];
    if (counting.mode != Counting::kLeased) lease.Fail("needs counting: leased");
    lease.ExpectMap({"max_fraction", "ttl"});
    if (lease.Has("max_fraction"))
      counting.lease_max_fraction = lease["max_fraction"].Fraction(0, 1);
    if (lease.Has("ttl")) counting.lease_ttl_ms = lease["ttl"].Duration().count();
  }
}

Rule ParseRule(const YamlField& f) {
  f.ExpectMap({"name", "key", "bucket", "capacity", "tokens", "period", "cost", "cost_from",
               "shadow", "match", "overrides", "wait", "algorithm", "counting", "sync_interval",
               "lease", "durable"});
  for (const char* required : {"name", "key", "capacity", "period"}) {
    if (!f.Has(required)) f.Fail(std::string("needs a ") + required);
  }
  Rule rule;
  rule.name = f["name"].String();
  rule.attribute = ParseRuleKey(f["key"]);
  if (f.Has("bucket")) rule.bucket = f["bucket"].String();
  rule.calendar = ParseCalendarPeriod(f);
  rule.limit = ParseLimit(f, {}, rule.calendar);
  if (f.Has("cost")) rule.cost = f["cost"].Integer(0, Limit::kMaxCapacity);
  if (f.Has("shadow")) rule.shadow = f["shadow"].Bool();
  if (f.Has("cost_from")) {
    const YamlField from = f["cost_from"];
    from.ExpectMap({"response_header"});
    if (!from.Has("response_header")) from.Fail("needs response_header");
    rule.cost_from_header = from["response_header"].String();
    if (rule.cost_from_header.empty()) from["response_header"].Fail("must not be empty");
  }
  if (f.Has("algorithm")) {
    const std::string algorithm = f["algorithm"].OneOf({"token-bucket", "gcra", "fixed-window"});
    rule.algorithm = algorithm == "gcra"           ? Algorithm::kGcra
                     : algorithm == "fixed-window" ? Algorithm::kFixedWindow
                                                   : Algorithm::kTokenBucket;
  }
  ParseDurable(f, rule);
  ParseCounting(f, rule.counting);
  if (f.Has("wait")) {
    YamlField wait = f["wait"];
    wait.ExpectMap({"replicas", "timeout"});
    if (!wait.Has("replicas") || !wait.Has("timeout")) wait.Fail("needs replicas and timeout");
    rule.wait.replicas = static_cast<int>(wait["replicas"].Integer(1, 64));
    rule.wait.timeout_ms = wait["timeout"].Duration().count();
  }
  if (f.Has("match")) {
    YamlField match = f["match"];
    match.ExpectMap({"methods", "path_prefix"});
    if (match.Has("methods")) {
      match["methods"].ForEach([&](const YamlField& m) { rule.methods.push_back(m.String()); });
    }
    if (match.Has("path_prefix")) rule.path_prefix = match["path_prefix"].String();
  }
  if (f.Has("overrides")) {
    f["overrides"].ForEachEntry([&](const std::string& value, const YamlField& o) {
      o.ExpectMap({"capacity", "tokens", "period"});
      rule.overrides.emplace(value, ParseLimit(o, rule.limit));
    });
  }
  f.Check(rule.Validate());
  return rule;
}

std::vector<Rule> ParseRules(const YamlField& f) {
  std::vector<Rule> rules;
  std::set<std::string, std::less<>> names;
  std::set<std::string, std::less<>> buckets;
  f.ForEach([&](const YamlField& r) {
    Rule rule = ParseRule(r);
    if (!names.insert(rule.name).second)
      r["name"].Fail("another rule is named \"" + rule.name + "\"");
    if (!buckets.insert(std::string(rule.BucketName())).second) {
      r.Fail("shares the bucket family \"" + std::string(rule.BucketName()) +
             "\" with an earlier rule; give it its own `bucket:` name");
    }
    rules.push_back(std::move(rule));
  });
  return rules;
}

// WAIT holds the store connection while it waits, so a wait must end well within the store's
// timeout; the memory store has no replicas to wait for.
void CheckReplicaWaits(const Config& config, const YamlField& rules) {
  size_t i = 0;
  rules.ForEach([&](const YamlField& rule) {
    const ReplicaWait& wait = config.rules[i++].wait;
    if (wait.replicas == 0) return;
    if (config.store.type == StoreType::kMemory)
      rule["wait"].Fail("the memory store has no replicas");
    const auto timeout = StoreTimeout(config.store);
    if (2 * wait.timeout_ms > timeout.count()) {
      rule["wait"].Fail("its timeout must be at most half the store's timeout (" +
                        std::to_string(timeout.count()) + " ms)");
    }
  });
}

// `{max_keys: N}` or `{}`: how many buckets an over-limit cache remembers at most.
size_t OverLimitCacheKeys(const YamlField& cache) {
  cache.ExpectMap({"max_keys"});
  return cache.Has("max_keys") ? static_cast<size_t>(cache["max_keys"].Integer(1, 100'000'000))
                               : 100'000;
}

DebugTopConfig ParseDebugTop(const YamlField& f) {
  f.ExpectMap({"size", "reveal_keys"});
  DebugTopConfig top;
  if (f.Has("size")) top.size = static_cast<size_t>(f["size"].Integer(0, 1000));
  if (f.Has("reveal_keys")) top.reveal_keys = f["reveal_keys"].Bool();
  return top;
}

// A duration gRPC takes as a channel argument: whole milliseconds in an int; `positive` refuses 0.
std::chrono::milliseconds GrpcDuration(const YamlField& f, bool positive) {
  const std::chrono::milliseconds d = f.Duration();
  if (positive && d.count() == 0) f.Fail("must be more than 0");
  if (d.count() > std::numeric_limits<int32_t>::max()) f.Fail("must be at most 24d");
  return d;
}

RlsKeepalive ParseRlsKeepalive(const YamlField& f) {
  f.ExpectMap({"time", "timeout", "min_client_ping_interval", "max_connection_age",
               "max_connection_age_grace"});
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

// Relative descriptor paths are taken from the configuration file's folder, so that the file and
// its descriptors move together.
RlsConfig ParseRls(const YamlField& f, const std::string& source, FailurePolicy failure) {
  f.ExpectMap({"listen", "json_listen", "config", "failure", "response_headers", "policy",
               "over_limit_cache", "quota_mode", "near_limit_ratio", "max_message_bytes",
               "max_concurrent_streams", "max_calls_in_flight", "keepalive"});
  RlsConfig rls;
  rls.failure = failure == FailurePolicy::kOpen ? RlsFailure::kOpen : RlsFailure::kClosed;
  if (f.Has("listen")) rls.listen = f["listen"].Check(ParseEndpoint(f["listen"].String()));
  if (f.Has("json_listen")) {
    rls.json_listen = f["json_listen"].Check(ParseEndpoint(f["json_listen"].String()));
  }
  if (!rls.listen && !rls.json_listen) f.Fail("needs listen, json_listen or both");
  if (!f.Has("config")) f.Fail("needs config: descriptor files or folders");
  const std::filesystem::path base = std::filesystem::path(source).parent_path();
  f["config"].ForEach(
      [&](const YamlField& path) { rls.config.push_back((base / path.String()).string()); });
  if (rls.config.empty()) f["config"].Fail("needs at least one file or folder");
  if (f.Has("failure")) {
    const std::string choice = f["failure"].OneOf({"open", "closed", "error"});
    rls.failure = choice == "open"     ? RlsFailure::kOpen
                  : choice == "closed" ? RlsFailure::kClosed
                                       : RlsFailure::kError;
  }
  if (f.Has("response_headers")) {
    const YamlField headers = f["response_headers"];
    headers.ExpectMap({"limit", "remaining", "reset"});
    RlsHeaderNames names;
    if (headers.Has("limit")) names.limit = headers["limit"].String();
    if (headers.Has("remaining")) names.remaining = headers["remaining"].String();
    if (headers.Has("reset")) names.reset = headers["reset"].String();
    rls.response_headers = names;
  }
  if (f.Has("policy")) rls.policy = f["policy"].Check(ParsePolicy(f["policy"].String()));
  if (f.Has("over_limit_cache"))
    rls.over_limit_cache_keys = OverLimitCacheKeys(f["over_limit_cache"]);
  if (f.Has("quota_mode")) rls.quota_mode = f["quota_mode"].Bool();
  if (f.Has("near_limit_ratio")) rls.near_limit_ratio = f["near_limit_ratio"].Fraction(0, 1);
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
  if (f.Has("keepalive")) rls.keepalive = ParseRlsKeepalive(f["keepalive"]);
  return rls;
}

AccessLogConfig ParseAccessLog(const YamlField& f) {
  f.ExpectMap({"path", "format", "buffer_lines"});
  AccessLogConfig log;
  if (!f.Has("path")) f.Fail("needs a path");
  log.path = f["path"].String();
  if (log.path.empty()) f["path"].Fail("must not be empty");
  if (f.Has("format")) {
    log.format = f["format"].OneOf({"json", "text"}) == "json" ? AccessLogConfig::Format::kJson
                                                               : AccessLogConfig::Format::kText;
  }
  if (f.Has("buffer_lines")) {
    log.buffer_lines = static_cast<size_t>(f["buffer_lines"].Integer(1, 10'000'000));
  }
  return log;
}

Config Parse(const YamlField& root, const std::string& source) {
  root.ExpectMap({"listen",           "check_listen",     "admin_listen",
                  "threads",          "upstream",         "store",
                  "failure",          "policy",           "headers",
                  "client",           "tenants",          "rules",
                  "key_prefix",       "hash_tag_values",  "max_body_bytes",
                  "max_header_bytes", "header_timeout",   "drain_timeout",
                  "max_connections",  "over_limit_cache", "rls",
                  "debug_top",        "near_limit_ratio", "access_log",
                  "quota_store"});
  Config config;
  config.source = source;
  auto endpoint = [&](const char* name) {
    return root[name].Check(ParseEndpoint(root[name].String()));
  };
  if (root.Has("listen")) config.listen = endpoint("listen");
  if (root.Has("check_listen")) config.check_listen = endpoint("check_listen");
  if (root.Has("admin_listen")) config.admin_listen = endpoint("admin_listen");
  config.threads = root.Has("threads") ? static_cast<unsigned>(root["threads"].Integer(1, 256))
                                       : std::max(1U, std::thread::hardware_concurrency());
  // The check API and Envoy's rate limit service can run alone: without an upstream there is
  // no proxy.
  if (root.Has("upstream")) {
    config.upstream = ParseUpstream(root["upstream"]);
  } else if (root.Has("listen")) {
    root["listen"].Fail("needs an upstream to forward to");
  } else if (!root.Has("check_listen") && !root.Has("rls")) {
    root.Fail("needs an upstream (for the proxy), check_listen (the check API alone) or rls");
  } else {
    config.proxy = false;
  }
  if (root.Has("store")) config.store = ParseStore(root["store"]);
  if (root.Has("failure")) {
    config.failure = root["failure"].Check(ParseFailurePolicy(root["failure"].String()));
  }
  if (root.Has("policy"))
    config.policy = root["policy"].Check(ParsePolicy(root["policy"].String()));
  if (root.Has("headers")) config.headers = ParseHeaders(root["headers"]);
  if (root.Has("client")) config.client = ParseClient(root["client"]);
  if (root.Has("tenants")) {
    root["tenants"].ForEachEntry([&](const std::string& key, const YamlField& tenant) {
      config.tenants.emplace(key, tenant.String());
    });
  }
  if (root.Has("key_prefix")) config.key_prefix = root["key_prefix"].String();
  if (root.Has("hash_tag_values")) config.hash_tag_values = root["hash_tag_values"].Bool();
  if (root.Has("max_body_bytes")) {
    config.max_body_bytes = static_cast<size_t>(root["max_body_bytes"].Integer(0, 1LL << 34));
  }
  if (root.Has("max_header_bytes")) {
    config.max_header_bytes = static_cast<size_t>(root["max_header_bytes"].Integer(1024, 1 << 20));
  }
  if (root.Has("header_timeout")) config.header_timeout = root["header_timeout"].Duration();
  if (root.Has("drain_timeout")) config.drain_timeout = root["drain_timeout"].Duration();
  if (root.Has("over_limit_cache")) {
    config.over_limit_cache_keys = OverLimitCacheKeys(root["over_limit_cache"]);
  }
  if (root.Has("max_connections")) {
    config.max_connections = static_cast<size_t>(root["max_connections"].Integer(1, 1'000'000));
  }
  if (root.Has("near_limit_ratio")) {
    config.near_limit_ratio = root["near_limit_ratio"].Fraction(0, 1);
  }
  if (root.Has("access_log")) config.access_log = ParseAccessLog(root["access_log"]);
  if (root.Has("rls")) config.rls = ParseRls(root["rls"], source, config.failure);
  if (root.Has("debug_top")) config.debug_top = ParseDebugTop(root["debug_top"]);
  if (root.Has("quota_store")) config.quota_store = ParseQuotaStore(root["quota_store"]);
  if (root.Has("rules")) {
    config.rules = ParseRules(root["rules"]);
    CheckReplicaWaits(config, root["rules"]);
    CheckDurableRules(config.rules, config.quota_store.has_value(), root["rules"]);
  } else if (!config.rls) {
    root.Fail("needs rules (an empty list checks nothing)");
  }
  return config;
}

}  // namespace

namespace {

// The value named `name` in `choices`, or an error that lists the names.
template <typename T>
Result<T> Choose(std::string_view name,
                 std::initializer_list<std::pair<std::string_view, T>> choices) {
  std::string list;
  for (const auto& [choice, value] : choices) {
    if (choice == name) return value;
    list += (list.empty() ? "" : " | ") + std::string(choice);
  }
  return Status::InvalidArgument("\"" + std::string(name) + "\" is not one of " + list);
}

}  // namespace

Result<MultiRulePolicy> ParsePolicy(std::string_view name) {
  return Choose<MultiRulePolicy>(name, {{"charge-all", MultiRulePolicy::kChargeAll},
                                        {"stop-at-first", MultiRulePolicy::kStopAtFirst},
                                        {"refund", MultiRulePolicy::kRefund},
                                        {"all-or-nothing", MultiRulePolicy::kAllOrNothing}});
}

Result<FailurePolicy> ParseFailurePolicy(std::string_view name) {
  return Choose<FailurePolicy>(
      name, {{"open", FailurePolicy::kOpen}, {"closed", FailurePolicy::kClosed}});
}

Result<ScriptMode> ParseScriptMode(std::string_view name) {
  return Choose<ScriptMode>(
      name, {{"evalsha", ScriptMode::kEvalsha}, {"function", ScriptMode::kFunction}});
}

std::chrono::milliseconds StoreTimeout(const StoreConfig& store) {
  switch (store.type) {
    case StoreType::kRedis:
    case StoreType::kSentinel:
      return store.redis.timeout;
    case StoreType::kCluster:
      return store.cluster.timeout;
    case StoreType::kMemory:
      break;
  }
  return std::chrono::milliseconds(0);
}

LimiterOptions LimiterOptionsOf(const Config& config) {
  LimiterOptions options{config.key_prefix, config.hash_tag_values, config.policy, config.failure};
  if (config.quota_store) options.quota_failure = config.quota_store->failure;
  if (config.over_limit_cache_keys > 0) {
    options.over_limit_cache = std::make_shared<OverLimitCache>(std::make_shared<SteadyClock>(),
                                                                config.over_limit_cache_keys);
  }
  return options;
}

Result<Config> ParseConfig(std::string_view yaml, std::string_view source) {
  const std::string name(source);
  return ReadYamlDocument<Config>(yaml, name, {.expand_environment = true},
                                  [&](const YamlField& root) { return Parse(root, name); });
}

Result<Config> LoadConfig(const std::string& path) {
  // The reason goes in the message: under systemd it is all the journal shows of a service that
  // would not start (a missing file, or one its dynamic user may not read).
  auto unreadable = [&path](int error) {
    return Status::InvalidArgument(path + ": cannot be read: " + std::strerror(error));
  };
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return unreadable(EISDIR);
  errno = 0;
  std::ifstream file(path);
  if (!file) return unreadable(errno != 0 ? errno : EIO);
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) return unreadable(errno != 0 ? errno : EIO);
  return ParseConfig(text.str(), path);
}

}  // namespace sluice::config
