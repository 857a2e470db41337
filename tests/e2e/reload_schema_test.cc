// Every field of the configuration's schema (src/config/schema.h), changed in a running
// `sluice serve`'s file and reloaded by SIGHUP: a field that reloads shows its new value in
// /status.json's configuration, one that needs a restart is refused by name. The fields come from
// the schema itself, so that a field added without a changed value here fails the test, and a
// field a reload silently ignores cannot exist.
#include <gtest/gtest.h>
#include <csignal>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/schema.h"
#include "e2e/processes.h"
#include "support/redis_server.h"

namespace sluice::e2e {
namespace {

using config::OnReload;
using config::Schema;
using config::SchemaField;

// A field's new value, with the fields that must change beside it for the file to stay valid
// (an empty value removes one).
struct Change {
  std::string value;
  std::map<std::string_view, std::string, std::less<>> beside = {};
};

// The steps of a dotted path.
std::vector<std::string_view> Steps(std::string_view path) {
  std::vector<std::string_view> steps;
  for (size_t dot; (dot = path.find('.')) != std::string_view::npos; path.remove_prefix(dot + 1)) {
    steps.push_back(path.substr(0, dot));
  }
  steps.push_back(path);
  return steps;
}

// The list that `path` is a field of each item of ("rules" of "rules[].capacity").
std::optional<std::string_view> ListOf(std::string_view path) {
  const size_t items = path.find("[]");
  if (items == std::string_view::npos) return std::nullopt;
  return path.substr(0, items);
}

// A change of a rule's field: the list of rules with that one rule.
Change RuleChange(const std::string& rule) { return {"", {{"rules", "[" + rule + "]"}}}; }

// Whether `log` refuses a reload by naming `path` or its section (a field of `store.tls` on a
// URL without TLS is refused for `store.tls`): because it needs a restart, or because the file
// with the change is not valid beside the rest.
bool RefusedNaming(const std::string& log, std::string_view path) {
  if (log.find("reload refused: " + std::string(path) + " needs a restart") != std::string::npos) {
    return true;
  }
  for (std::string named(path); named.find('.') != std::string::npos;
       named.resize(named.rfind('.'))) {
    if (log.find(": " + named + ": ") != std::string::npos) return true;
  }
  return false;
}

// One process whose file is the base below with at most one field changed.
class SchemaWalk {
 public:
  SchemaWalk() : dir_(std::filesystem::temp_directory_path() / ("sluice-schema-" + Port())) {
    std::filesystem::create_directories(dir_ / "descriptors");
    std::ofstream(dir_ / "descriptors" / "edge.yaml")
        << "domain: edge\ndescriptors:\n  - key: client\n    rate_limit: {unit: hour, "
           "requests_per_unit: 3}\n";
    StartOnFreePorts(
        [this]() -> Process& {
          base_ = Base();
          Write("");
          process_ = std::make_unique<Process>(
              std::vector<std::string>{SLUICE_BINARY, "serve", "--config", Path()}, LogPath());
          return *process_;
        },
        [this] { return Healthy(admin_); });
    changes_ = Changes();
  }
  ~SchemaWalk() {
    process_.reset();
    std::filesystem::remove_all(dir_);
  }
  SchemaWalk(const SchemaWalk&) = delete;
  SchemaWalk& operator=(const SchemaWalk&) = delete;

  // The file with `path`'s change in it (none: the base as it is).
  void Write(std::string_view path) const {
    std::map<std::string_view, std::string, std::less<>> values = base_;
    if (const Change* change = ChangeOf(path)) {
      values[path] = change->value;
      for (const auto& [beside, value] : change->beside) values[beside] = value;
    }
    std::ofstream file(Path());
    std::vector<std::string_view> open;  // the sections written last, outermost first
    std::vector<std::string_view> written;
    for (const SchemaField& field : Schema()) {
      // A list's fields are written as the whole list, in flow style, once.
      const std::string_view key = ListOf(field.path).value_or(field.path);
      if (std::find(written.begin(), written.end(), key) != written.end()) continue;
      written.push_back(key);
      auto it = values.find(key);
      if (it == values.end() || it->second.empty()) continue;
      std::vector<std::string_view> steps = Steps(key);
      size_t shared = 0;
      while (shared < open.size() && shared + 1 < steps.size() && open[shared] == steps[shared]) {
        ++shared;
      }
      open.resize(shared);
      for (; open.size() + 1 < steps.size(); open.push_back(steps[open.size()])) {
        file << std::string(2 * open.size(), ' ') << steps[open.size()] << ":\n";
      }
      file << std::string(2 * open.size(), ' ') << steps.back() << ": " << it->second << "\n";
    }
  }

  // The change the test makes to `path`; null when it has none (a field added to the schema
  // without one here).
  const Change* ChangeOf(std::string_view path) const {
    auto it = changes_.find(path);
    return it == changes_.end() ? nullptr : &it->second;
  }

  // /status.json's configuration.
  nlohmann::json Configuration() const {
    return nlohmann::json::parse(Fetch(admin_, "GET", "/status.json").body)["config"];
  }

  double Reloads(const std::string& result) const { return e2e::Reloads(admin_, result); }

  std::string Log() const {
    std::ifstream in(LogPath());
    return {std::istreambuf_iterator<char>(in), {}};
  }

  const Process& process() const { return *process_; }

 private:
  static std::string Port() { return std::to_string(FreePort()); }
  std::string Path() const { return (dir_ / "sluice.yaml").string(); }
  std::string LogPath() const { return (dir_ / "sluice.log").string(); }
  std::string Dir() const { return dir_.string(); }

  // Every field's value in the base; an empty one is absent from the file.
  std::map<std::string_view, std::string, std::less<>> Base() {
    admin_ = FreePort();
    return {
        {"listen", "127.0.0.1:" + Port()},
        {"check_listen", "127.0.0.1:" + Port()},
        {"admin_listen", "127.0.0.1:" + std::to_string(admin_)},
        {"threads", "2"},
        {"upstream.address", "127.0.0.1:" + Port()},
        {"upstream.pool", "8"},
        {"upstream.connect_timeout", "1s"},
        {"upstream.timeout", "1s"},
        {"upstream.idle_timeout", "60s"},
        {"upstream.max_response_bytes", "100000"},
        {"store.type", "redis"},
        {"store.url", "redis://127.0.0.1:" + std::to_string(redis_.port())},
        {"store.mode", "evalsha"},
        {"store.layout", "hash"},
        {"store.timeout", "1s"},
        {"store.connect_timeout", "1s"},
        {"store.max_in_flight", "1000"},
        {"store.max_buckets", "100000"},
        // Nothing listens there: the gateway starts, its durable rules (none) would fail open.
        {"quota_store.type", "postgres"},
        {"quota_store.url", "postgresql://sluice@127.0.0.1:" + Port() + "/sluice"},
        {"quota_store.timeout", "1s"},
        {"quota_store.connect_timeout", "200ms"},
        {"quota_store.pool", "2"},
        {"quota_store.failure", "open"},
        {"failure", "open"},
        {"policy", "charge-all"},
        {"headers", "[ietf, x-ratelimit]"},
        {"client.trusted_proxies", "[]"},
        {"client.forwarding_header", "x-forwarded-for"},
        {"client.api_key_header", "X-Api-Key"},
        {"client.tenant_header", "\"\""},
        {"tenants", "{}"},
        {"rules", "[{name: per-key, key: key, capacity: 5, period: 1h}]"},
        {"key_prefix", "\"rl:\""},
        {"hash_tag_values", "false"},
        {"over_limit_cache.max_keys", "100"},
        {"near_limit_ratio", "0.8"},
        {"max_body_bytes", "100000"},
        {"max_header_bytes", "16384"},
        {"header_timeout", "10s"},
        {"drain_timeout", "1s"},
        {"max_connections", "100"},
        {"access_log.path", Dir() + "/access.log"},
        {"access_log.format", "json"},
        {"access_log.buffer_lines", "1000"},
        {"debug_top.size", "20"},
        {"debug_top.reveal_keys", "false"},
        {"rls.listen", ""},
        {"rls.json_listen", "127.0.0.1:" + Port()},
        {"rls.config", "[" + Dir() + "/descriptors/]"},
        {"rls.failure", "open"},
        {"rls.policy", "charge-all"},
        {"rls.over_limit_cache.max_keys", "100"},
        {"rls.quota_mode", "false"},
        {"rls.near_limit_ratio", "0.8"},
        {"rls.max_message_bytes", "1048576"},
        {"rls.max_concurrent_streams", "100"},
        {"rls.max_calls_in_flight", "1000"},
        {"rls.keepalive.time", "60s"},
    };
  }

  // A change of each field: for a field that reloads, a value valid beside the rest of the base.
  std::map<std::string_view, Change, std::less<>> Changes() const {
    return {
        {"listen", {"127.0.0.1:" + Port()}},
        {"check_listen", {"127.0.0.1:" + Port()}},
        {"admin_listen", {"127.0.0.1:" + Port()}},
        {"threads", {"3"}},
        {"upstream.address", {"127.0.0.1:" + Port()}},
        {"upstream.pool", {"9"}},
        {"upstream.connect_timeout", {"2s"}},
        {"upstream.timeout", {"2s"}},
        {"upstream.idle_timeout", {"30s"}},
        {"upstream.max_response_bytes", {"200000"}},
        {"store.type",
         {"memory",
          {{"store.url", ""},
           {"store.mode", ""},
           {"store.layout", ""},
           {"store.timeout", ""},
           {"store.connect_timeout", ""},
           {"store.max_in_flight", ""}}}},
        {"store.url", {"redis://127.0.0.1:" + Port()}},
        {"store.nodes", {"[127.0.0.1:7000]"}},
        {"store.sentinels", {"[127.0.0.1:26379]"}},
        {"store.master", {"mymaster"}},
        {"store.db", {"1"}},
        {"store.username", {"sluice"}},
        {"store.password", {"secret"}},
        {"store.password_file", {Secret("redis-password")}},
        {"store.sentinel_username", {"sluice"}},
        {"store.sentinel_password", {"secret"}},
        {"store.sentinel_password_file", {Secret("sentinel-password")}},
        {"store.tls.ca_file", {Secret("ca.pem")}},
        {"store.tls.cert_file", {Secret("cert.pem"), {{"store.tls.key_file", Secret("key.pem")}}}},
        {"store.tls.key_file", {Secret("key.pem"), {{"store.tls.cert_file", Secret("cert.pem")}}}},
        {"store.tls.server_name", {"redis.internal"}},
        {"store.tls.verify", {"false"}},
        {"store.mode", {"function"}},
        {"store.layout", {"compact"}},
        {"store.timeout", {"2s"}},
        {"store.connect_timeout", {"2s"}},
        {"store.max_in_flight", {"2000"}},
        {"store.refresh_interval", {"10s"}},
        {"store.max_buckets", {"200000"}},
        {"quota_store.type", {"mysql"}},
        {"quota_store.url", {"postgresql://sluice@127.0.0.1:" + Port() + "/sluice"}},
        {"quota_store.password", {"secret"}},
        {"quota_store.password_file", {Secret("postgres-password")}},
        {"quota_store.timeout", {"2s"}},
        {"quota_store.connect_timeout", {"300ms"}},
        {"quota_store.pool", {"3"}},
        {"quota_store.failure", {"closed"}},
        {"failure", {"closed"}},
        {"policy", {"refund"}},
        {"headers", {"[ietf]"}},
        {"client.trusted_proxies", {"[10.0.0.0/8]"}},
        {"client.forwarding_header", {"forwarded"}},
        {"client.api_key_header", {"X-Key"}},
        {"client.tenant_header", {"X-Tenant"}},
        {"tenants", {"{k1: acme}"}},
        {"rules[].name", RuleChange("{name: other, key: key, capacity: 5, period: 1h}")},
        {"rules[].key", RuleChange("{name: per-key, key: ip, capacity: 5, period: 1h}")},
        {"rules[].bucket",
         RuleChange("{name: per-key, key: key, capacity: 5, period: 1h, bucket: keys}")},
        {"rules[].capacity", RuleChange("{name: per-key, key: key, capacity: 9, period: 1h}")},
        {"rules[].tokens",
         RuleChange("{name: per-key, key: key, capacity: 5, period: 1h, tokens: 2}")},
        {"rules[].period", RuleChange("{name: per-key, key: key, capacity: 5, period: 2h}")},
        {"rules[].cost", RuleChange("{name: per-key, key: key, capacity: 5, period: 1h, cost: 2}")},
        {"rules[].cost_from.response_header",
         RuleChange("{name: per-key, key: key, capacity: 5, period: 1h, cost_from: "
                    "{response_header: X-Cost}}")},
        {"rules[].shadow",
         RuleChange("{name: per-key, key: key, capacity: 5, period: 1h, shadow: true}")},
        {"rules[].match.methods",
         RuleChange("{name: per-key, key: key, capacity: 5, period: 1h, match: {methods: [GET]}}")},
        {"rules[].match.path_prefix",
         RuleChange(
             "{name: per-key, key: key, capacity: 5, period: 1h, match: {path_prefix: /api}}")},
        {"rules[].overrides.*.capacity",
         RuleChange(
             "{name: per-key, key: key, capacity: 5, period: 1h, overrides: {k1: {capacity: 7}}}")},
        {"rules[].overrides.*.tokens",
         RuleChange(
             "{name: per-key, key: key, capacity: 5, period: 1h, overrides: {k1: {tokens: 2}}}")},
        {"rules[].overrides.*.period",
         RuleChange(
             "{name: per-key, key: key, capacity: 5, period: 1h, overrides: {k1: {period: 2h}}}")},
        {"rules[].wait.replicas", RuleChange("{name: per-key, key: key, capacity: 5, period: 1h, "
                                             "wait: {replicas: 1, timeout: 10ms}}")},
        {"rules[].wait.timeout", RuleChange("{name: per-key, key: key, capacity: 5, period: 1h, "
                                            "wait: {replicas: 1, timeout: 20ms}}")},
        {"rules[].algorithm",
         RuleChange("{name: per-key, key: key, capacity: 5, period: 1h, algorithm: gcra}")},
        {"rules[].counting",
         RuleChange("{name: per-key, key: key, capacity: 5, period: 1h, counting: synced}")},
        {"rules[].sync_interval", RuleChange("{name: per-key, key: key, capacity: 5, period: 1h, "
                                             "counting: synced, sync_interval: 50ms}")},
        {"rules[].lease.max_fraction",
         RuleChange("{name: per-key, key: key, capacity: 5, period: 1h, counting: leased, lease: "
                    "{max_fraction: 0.2}}")},
        {"rules[].lease.ttl", RuleChange("{name: per-key, key: key, capacity: 5, period: 1h, "
                                         "counting: leased, lease: {ttl: 2s}}")},
        {"rules[].durable",
         RuleChange("{name: per-key, key: key, capacity: 5, period: 1h, durable: true}")},
        {"key_prefix", {"\"rl2:\""}},
        {"hash_tag_values", {"true"}},
        {"over_limit_cache.max_keys", {"200"}},
        {"near_limit_ratio", {"0.5"}},
        {"max_body_bytes", {"200000"}},
        {"max_header_bytes", {"32768"}},
        {"header_timeout", {"5s"}},
        {"drain_timeout", {"2s"}},
        {"max_connections", {"200"}},
        {"access_log.path", {Dir() + "/other.log"}},
        {"access_log.format", {"text"}},
        {"access_log.buffer_lines", {"2000"}},
        {"debug_top.size", {"10"}},
        {"debug_top.reveal_keys", {"true"}},
        {"rls.listen", {"127.0.0.1:" + Port()}},
        {"rls.json_listen", {"127.0.0.1:" + Port()}},
        {"rls.config", {"[" + Dir() + "/descriptors/edge.yaml]"}},
        {"rls.failure", {"closed"}},
        {"rls.response_headers.limit", {"X-Limit"}},
        {"rls.response_headers.remaining", {"X-Remaining"}},
        {"rls.response_headers.reset", {"X-Reset"}},
        {"rls.policy", {"refund"}},
        {"rls.over_limit_cache.max_keys", {"200"}},
        {"rls.quota_mode", {"true"}},
        {"rls.near_limit_ratio", {"0.5"}},
        {"rls.max_message_bytes", {"2097152"}},
        {"rls.max_concurrent_streams", {"200"}},
        {"rls.max_calls_in_flight", {"2000"}},
        {"rls.keepalive.time", {"2m"}},
        {"rls.keepalive.timeout", {"10s"}},
        {"rls.keepalive.min_client_ping_interval", {"5s"}},
        {"rls.keepalive.max_connection_age", {"1h"}},
        {"rls.keepalive.max_connection_age_grace", {"1m"}},
    };
  }

  // A file holding a secret, named `name` in the test's folder; its path.
  std::string Secret(const std::string& name) const {
    const std::filesystem::path path = dir_ / name;
    std::ofstream(path) << "secret\n";
    return path.string();
  }

  testing::RedisServer redis_;
  std::filesystem::path dir_;
  uint16_t admin_ = 0;
  std::map<std::string_view, std::string, std::less<>> base_;
  std::map<std::string_view, Change, std::less<>> changes_;
  std::unique_ptr<Process> process_;
};

TEST(ReloadSchemaTest, EveryFieldReloadsOrIsRefusedByName) {
  SchemaWalk walk;
  const nlohmann::json base = walk.Configuration();
  double successes = walk.Reloads("success");
  double failures = walk.Reloads("failure");
  for (const SchemaField& field : Schema()) {
    SCOPED_TRACE(std::string(field.path));
    if (walk.ChangeOf(field.path) == nullptr) {
      ADD_FAILURE() << field.path << " has no changed value in this test: give it one";
      continue;
    }
    walk.Write(field.path);
    walk.process().Signal(SIGHUP);
    // Whichever way the reload went, it was counted: only then are its effects asserted.
    ASSERT_TRUE(WaitUntil(
        [&] { return walk.Reloads("success") + walk.Reloads("failure") > successes + failures; },
        milliseconds(5000)));
    if (field.on_reload == OnReload::kRestart) {
      EXPECT_EQ(walk.Reloads("failure"), failures + 1);
      EXPECT_TRUE(RefusedNaming(walk.Log(), field.path)) << walk.Log();
    } else {
      EXPECT_EQ(walk.Reloads("success"), successes + 1) << walk.Log();
      EXPECT_NE(walk.Configuration(), base);
    }
    successes = walk.Reloads("success");
    failures = walk.Reloads("failure");
  }
}

}  // namespace
}  // namespace sluice::e2e
