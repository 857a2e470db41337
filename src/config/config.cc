#include "config/config.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>

#include "config/quota_store_config.h"
#include "config/schema.h"
#include "config/yaml_field.h"

namespace sluice::config {
namespace {

UpstreamConfig ParseUpstream(const YamlField& f) {
  f.ExpectMap(KeysOf("upstream"));
  UpstreamConfig upstream;
  if (!f.Has("address")) f.Fail("needs an address (host:port)");
  upstream.address = f["address"].Require(ParseEndpoint(f["address"].String()));
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

ClientConfig ParseClient(const YamlField& f) {
  f.ExpectMap(KeysOf("client"));
  ClientConfig client;
  if (f.Has("forwarding_header")) {
    client.forwarding_header =
        f["forwarding_header"].OneOf({"x-forwarded-for", "forwarded"}) == "forwarded"
            ? ForwardingHeader::kForwarded
            : ForwardingHeader::kXForwardedFor;
  }
  if (f.Has("trusted_proxies")) {
    f["trusted_proxies"].ForEach([&](const YamlField& cidr) {
      client.trusted_proxies.push_back(cidr.Require(Network::Parse(cidr.String())));
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

DebugTopConfig ParseDebugTop(const YamlField& f) {
  f.ExpectMap(KeysOf("debug_top"));
  DebugTopConfig top;
  if (f.Has("size")) top.size = static_cast<size_t>(f["size"].Integer(0, 1000));
  if (f.Has("reveal_keys")) top.reveal_keys = f["reveal_keys"].Bool();
  return top;
}

AccessLogConfig ParseAccessLog(const YamlField& f) {
  f.ExpectMap(KeysOf("access_log"));
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

// `listen`, `check_listen`, `admin_listen` and `upstream`. The check API and Envoy's rate
// limit service can run alone: without an upstream there is no proxy.
void ParseServing(const YamlField& root, Config& config) {
  auto endpoint = [&](const char* name) {
    return root[name].Require(ParseEndpoint(root[name].String()));
  };
  if (root.Has("listen")) config.listen = endpoint("listen");
  if (root.Has("check_listen")) config.check_listen = endpoint("check_listen");
  if (root.Has("admin_listen")) config.admin_listen = endpoint("admin_listen");
  if (root.Has("upstream")) {
    config.upstream = ParseUpstream(root["upstream"]);
  } else if (root.Has("listen")) {
    root["listen"].Fail("needs an upstream to forward to");
  } else if (!root.Has("check_listen") && !root.Has("rls")) {
    root.Fail("needs an upstream (for the proxy), check_listen (the check API alone) or rls");
  } else {
    config.proxy = false;
  }
}

// What bounds a connection and a request: sizes, timeouts, connections.
void ParseBounds(const YamlField& root, Config& config) {
  if (root.Has("max_body_bytes")) {
    config.max_body_bytes = static_cast<size_t>(root["max_body_bytes"].Integer(0, 1LL << 34));
  }
  if (root.Has("max_header_bytes")) {
    config.max_header_bytes = static_cast<size_t>(root["max_header_bytes"].Integer(1024, 1 << 20));
  }
  if (root.Has("header_timeout")) config.header_timeout = root["header_timeout"].Duration();
  if (root.Has("drain_timeout")) config.drain_timeout = root["drain_timeout"].Duration();
  if (root.Has("max_connections")) {
    config.max_connections = static_cast<size_t>(root["max_connections"].Integer(1, 1'000'000));
  }
}

// `failure`, `policy`, `headers`, `client`, `tenants`, the keys' shape and the over-limit cache:
// how requests are identified and decided.
void ParseDeciding(const YamlField& root, Config& config) {
  if (root.Has("failure")) {
    config.failure = root["failure"].Require(ParseFailurePolicy(root["failure"].String()));
  }
  if (root.Has("policy")) {
    config.policy = root["policy"].Require(ParsePolicy(root["policy"].String()));
  }
  if (root.Has("headers")) config.headers = ParseHeaders(root["headers"]);
  if (root.Has("client")) config.client = ParseClient(root["client"]);
  if (root.Has("tenants")) {
    root["tenants"].ForEachEntry([&](const std::string& key, const YamlField& tenant) {
      config.tenants.emplace(key, tenant.String());
    });
  }
  if (root.Has("key_prefix")) config.key_prefix = root["key_prefix"].String();
  if (root.Has("hash_tag_values")) config.hash_tag_values = root["hash_tag_values"].Bool();
  if (root.Has("over_limit_cache")) {
    config.over_limit_cache_keys =
        ParseOverLimitCacheKeys(root["over_limit_cache"], "over_limit_cache");
  }
  if (root.Has("near_limit_ratio")) {
    config.near_limit_ratio = root["near_limit_ratio"].Fraction(0, 1);
  }
}

// The node at the dotted `path` below `node`, or nothing when a step is absent. (Recursive:
// assigning to a YAML::Node would overwrite the node it refers to.)
std::optional<YAML::Node> NodeAt(const YAML::Node& node, std::string_view path) {
  const size_t dot = path.find('.');
  const std::string step(path.substr(0, dot));
  if (!node.IsMap() || !node[step]) return std::nullopt;
  const YAML::Node next = node[step];
  if (dot == std::string_view::npos) return next;
  return NodeAt(next, path.substr(dot + 1));
}

// The text of each field a reload compares by text, as the file has it.
void RecordFieldTexts(const YamlField& root, Config& config) {
  for (const SchemaField& field : Schema()) {
    if (!ComparedByText(field)) continue;
    if (std::optional<YAML::Node> node = NodeAt(root.node(), field.path)) {
      config.field_texts.emplace(field.path, YAML::Dump(*node));
    }
  }
}

Config Parse(const YamlField& root, const std::string& source) {
  root.ExpectMap(KeysOf(""));
  Config config;
  config.source = source;
  config.threads = root.Has("threads") ? static_cast<unsigned>(root["threads"].Integer(1, 256))
                                       : std::max(1U, std::thread::hardware_concurrency());
  ParseServing(root, config);
  if (root.Has("store")) config.store = ParseStore(root["store"]);
  ParseDeciding(root, config);
  ParseBounds(root, config);
  if (root.Has("access_log")) config.access_log = ParseAccessLog(root["access_log"]);
  if (root.Has("rls")) config.rls = ParseRls(root["rls"], source, config.failure);
  if (root.Has("debug_top")) config.debug_top = ParseDebugTop(root["debug_top"]);
  if (root.Has("quota_store")) config.quota_store = ParseQuotaStore(root["quota_store"]);
  RecordFieldTexts(root, config);
  if (root.Has("rules")) {
    config.rules = ParseRules(root["rules"]);
    ValidateReplicaWaits(config.rules, config.store, root["rules"]);
    ValidateDurableRules(config.rules, config.quota_store.has_value(), root["rules"]);
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

LimiterOptions LimiterOptionsOf(const Config& config) {
  LimiterOptions options{config.key_prefix, config.hash_tag_values, config.policy, config.failure};
  if (config.quota_store) options.quota_failure = config.quota_store->failure;
  if (config.over_limit_cache_keys > 0) {
    options.over_limit_cache =
        std::make_shared<OverLimitCache>(ProcessSteadyClock(), config.over_limit_cache_keys);
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
    return Status::InvalidArgument(path +
                                   ": cannot be read: " + std::generic_category().message(error));
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
