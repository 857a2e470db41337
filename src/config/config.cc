#include "config/config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <set>
#include <sstream>
#include <thread>

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

ClusterOptions ParseCluster(const YamlField& f) {
  for (const char* field : {"url"}) {
    if (f.Has(field)) f[field].Fail("a cluster store takes nodes: [host:port, ...], not a url");
  }
  if (!f.Has("nodes")) f.Fail("a cluster store needs nodes: [host:port, ...]");
  ClusterOptions cluster;
  f["nodes"].ForEach([&](const YamlField& node) {
    cluster.seeds.push_back(node.Check(ParseHostPort(node.String())));
  });
  if (cluster.seeds.empty()) f["nodes"].Fail("needs at least one host:port");
  if (f.Has("username")) cluster.username = f["username"].String();
  if (f.Has("password")) cluster.password = f["password"].String();
  if (f.Has("mode")) cluster.mode = f["mode"].Check(ParseScriptMode(f["mode"].String()));
  if (f.Has("timeout")) cluster.timeout = f["timeout"].Duration();
  if (f.Has("connect_timeout")) cluster.connect_timeout = f["connect_timeout"].Duration();
  if (f.Has("refresh_interval")) cluster.refresh_interval = f["refresh_interval"].Duration();
  if (f.Has("max_in_flight")) {
    cluster.max_in_flight = static_cast<size_t>(f["max_in_flight"].Integer(1, 10'000'000));
  }
  if (cluster.timeout.count() == 0) f["timeout"].Fail("must be more than 0");
  if (cluster.refresh_interval.count() == 0) f["refresh_interval"].Fail("must be more than 0");
  return cluster;
}

StoreConfig ParseStore(const YamlField& f) {
  f.ExpectMap({"type", "url", "nodes", "username", "password", "mode", "timeout", "connect_timeout",
               "max_in_flight", "refresh_interval"});
  StoreConfig store;
  const std::string type =
      f.Has("type") ? f["type"].OneOf({"memory", "redis", "cluster"}) : "memory";
  if (type == "memory") {
    for (const char* shared_only : {"url", "nodes", "username", "password", "mode", "timeout",
                                    "connect_timeout", "max_in_flight", "refresh_interval"}) {
      if (f.Has(shared_only)) f[shared_only].Fail("applies only to a redis or cluster store");
    }
    return store;
  }
  if (type == "cluster") {
    store.type = StoreType::kCluster;
    store.cluster = ParseCluster(f);
    return store;
  }
  for (const char* cluster_only : {"nodes", "username", "password", "refresh_interval"}) {
    if (f.Has(cluster_only)) {
      f[cluster_only].Fail("applies only to a cluster store (a redis store takes them in url)");
    }
  }
  store.type = StoreType::kRedis;
  if (!f.Has("url")) f.Fail("a redis store needs a url (redis://[user:password@]host:port[/db])");
  store.redis = f["url"].Check(ParseRedisUrl(f["url"].String()));
  if (f.Has("mode")) store.redis.mode = f["mode"].Check(ParseScriptMode(f["mode"].String()));
  if (f.Has("timeout")) store.redis.timeout = f["timeout"].Duration();
  if (f.Has("connect_timeout")) store.redis.connect_timeout = f["connect_timeout"].Duration();
  if (f.Has("max_in_flight")) {
    store.redis.max_in_flight = static_cast<size_t>(f["max_in_flight"].Integer(1, 10'000'000));
  }
  if (store.redis.timeout.count() == 0) f["timeout"].Fail("must be more than 0");
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

Limit ParseLimit(const YamlField& f, Limit base) {
  if (f.Has("capacity")) base.capacity = f["capacity"].Integer(1, Limit::kMaxCapacity);
  base.tokens = f.Has("tokens") ? f["tokens"].Integer(1, Limit::kMaxCapacity) : base.capacity;
  if (f.Has("period")) base.period_ms = f["period"].Duration().count();
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
  f.ExpectMap({"name", "key", "bucket", "capacity", "tokens", "period", "cost", "shadow", "match",
               "overrides", "wait", "algorithm", "counting", "sync_interval", "lease"});
  for (const char* required : {"name", "key", "capacity", "period"}) {
    if (!f.Has(required)) f.Fail(std::string("needs a ") + required);
  }
  Rule rule;
  rule.name = f["name"].String();
  rule.attribute = ParseRuleKey(f["key"]);
  if (f.Has("bucket")) rule.bucket = f["bucket"].String();
  rule.limit = ParseLimit(f, {});
  if (f.Has("cost")) rule.cost = f["cost"].Integer(0, Limit::kMaxCapacity);
  if (f.Has("shadow")) rule.shadow = f["shadow"].Bool();
  if (f.Has("algorithm")) {
    const std::string algorithm = f["algorithm"].OneOf({"token-bucket", "gcra", "fixed-window"});
    rule.algorithm = algorithm == "gcra"           ? Algorithm::kGcra
                     : algorithm == "fixed-window" ? Algorithm::kFixedWindow
                                                   : Algorithm::kTokenBucket;
  }
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
    const auto timeout = config.store.type == StoreType::kRedis ? config.store.redis.timeout
                                                                : config.store.cluster.timeout;
    if (2 * wait.timeout_ms > timeout.count()) {
      rule["wait"].Fail("its timeout must be at most half the store's timeout (" +
                        std::to_string(timeout.count()) + " ms)");
    }
  });
}

// Relative descriptor paths are taken from the configuration file's folder, so that the file and
// its descriptors move together.
RlsConfig ParseRls(const YamlField& f, const std::string& source, FailurePolicy failure) {
  f.ExpectMap({"listen", "json_listen", "config", "failure", "response_headers"});
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
  return rls;
}

Config Parse(const YamlField& root, const std::string& source) {
  root.ExpectMap({"listen",           "check_listen",     "admin_listen",
                  "threads",          "upstream",         "store",
                  "failure",          "policy",           "headers",
                  "client",           "tenants",          "rules",
                  "key_prefix",       "hash_tag_values",  "max_body_bytes",
                  "max_header_bytes", "header_timeout",   "drain_timeout",
                  "max_connections",  "over_limit_cache", "rls"});
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
  // Envoy's rate limit service can run alone: without an upstream there is no proxy.
  if (root.Has("upstream")) {
    config.upstream = ParseUpstream(root["upstream"]);
  } else if (!root.Has("rls")) {
    root.Fail("needs an upstream");
  } else if (root.Has("listen")) {
    root["listen"].Fail("needs an upstream to forward to");
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
    YamlField cache = root["over_limit_cache"];
    cache.ExpectMap({"max_keys"});
    config.over_limit_cache_keys =
        cache.Has("max_keys") ? static_cast<size_t>(cache["max_keys"].Integer(1, 100'000'000))
                              : 100'000;
  }
  if (root.Has("max_connections")) {
    config.max_connections = static_cast<size_t>(root["max_connections"].Integer(1, 1'000'000));
  }
  if (root.Has("rls")) config.rls = ParseRls(root["rls"], source, config.failure);
  if (root.Has("rules")) {
    config.rules = ParseRules(root["rules"]);
    CheckReplicaWaits(config, root["rules"]);
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

LimiterOptions LimiterOptionsOf(const Config& config) {
  LimiterOptions options{config.key_prefix, config.hash_tag_values, config.policy, config.failure};
  if (config.over_limit_cache_keys > 0) {
    options.over_limit_cache = std::make_shared<OverLimitCache>(std::make_shared<SteadyClock>(),
                                                                config.over_limit_cache_keys);
  }
  return options;
}

Result<Config> ParseConfig(std::string_view yaml, std::string_view source) {
  const std::string name(source);
  return ReadYamlDocument<Config>(yaml, name,
                                  [&](const YamlField& root) { return Parse(root, name); });
}

Result<Config> LoadConfig(const std::string& path) {
  std::ifstream file(path);
  if (!file) return Status::InvalidArgument(path + ": cannot be read");
  std::ostringstream text;
  text << file.rdbuf();
  return ParseConfig(text.str(), path);
}

}  // namespace sluice::config
