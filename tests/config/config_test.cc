#include "config/config.h"
#include "config/store_options.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace sluice::config {
namespace {

std::string ReadExample(const std::string& name = "gateway.yaml") {
  std::ifstream file(std::string(SLUICE_SOURCE_DIR) + "/examples/" + name);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

TEST(ConfigTest, TheIssuesExampleLoadsWhole) {
  Result<Config> c = ParseConfig(ReadExample(), "gateway.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->listen, (Endpoint{"0.0.0.0", 8080}));
  EXPECT_EQ(c->check_listen, (Endpoint{"127.0.0.1", 8081}));
  EXPECT_EQ(c->threads, 2u);
  EXPECT_EQ(c->upstream.address, (Endpoint{"127.0.0.1", 9000}));
  EXPECT_EQ(c->upstream.pool, 64u);
  EXPECT_EQ(c->upstream.timeout, std::chrono::seconds(30));
  EXPECT_EQ(c->store.type, "redis");
  EXPECT_EQ(RedisOf(c->store).port, 6379);
  EXPECT_EQ(RedisOf(c->store).timeout, std::chrono::milliseconds(50));
  EXPECT_EQ(c->failure, FailurePolicy::kOpen);
  EXPECT_EQ(c->policy, MultiRulePolicy::kChargeAll);
  EXPECT_TRUE(c->headers.ietf && c->headers.x_ratelimit);
  EXPECT_EQ(c->client.api_key_header, "X-Api-Key");
  EXPECT_EQ(c->client.tenant_header, "X-Tenant-Id");
  EXPECT_EQ(c->tenants.at("ak_abc123"), "org_acme");
  ASSERT_EQ(c->rules.size(), 3u);
  const Rule& per_key = c->rules[1];
  EXPECT_EQ(per_key.attribute, "key");
  EXPECT_EQ(per_key.limit, (Limit{100, 100, 60'000}));
  EXPECT_EQ(per_key.methods, (std::vector<std::string>{"GET", "POST"}));
  EXPECT_EQ(per_key.path_prefix, "/api/");
  EXPECT_EQ(per_key.overrides.at("ak_big"), (Limit{1000, 1000, 60'000}));
  EXPECT_EQ(c->rules[2].limit, (Limit{10'000, 10'000, 3'600'000}));
}

TEST(ConfigTest, TheDemoConfigurationLoads) {
  Result<Config> c = ParseConfig(ReadExample("demo.yaml"), "demo.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->store.type, "memory");
  EXPECT_EQ(c->listen, (Endpoint{"127.0.0.1", 8080}));
}

// The Debian package's /etc/sluice/sluice.yaml: the service starts on it with nothing else
// installed, so it must need no upstream or Redis and listen on loopback alone.
TEST(ConfigTest, TheShippedConfigurationServesTheCheckApiOnLoopback) {
  Result<Config> c = LoadConfig(std::string(SLUICE_SOURCE_DIR) + "/packaging/sluice.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_FALSE(c->proxy);
  EXPECT_FALSE(c->rls);
  EXPECT_EQ(c->store.type, "memory");
  ASSERT_TRUE(c->check_listen);
  EXPECT_EQ(c->check_listen->host, "127.0.0.1");
  EXPECT_EQ(c->admin_listen.host, "127.0.0.1");
  EXPECT_FALSE(c->rules.empty());
}

TEST(ConfigTest, TheCheckApiRunsWithoutAnUpstream) {
  Result<Config> c = ParseConfig(
      "check_listen: 127.0.0.1:8081\n"
      "rules: [{name: per-ip, key: ip, capacity: 10, period: 1s}]\n",
      "check.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_FALSE(c->proxy);
  EXPECT_EQ(c->check_listen, (Endpoint{"127.0.0.1", 8081}));
}

TEST(ConfigTest, DefaultsForAMinimalFile) {
  Result<Config> c = ParseConfig(
      "upstream: {address: 127.0.0.1:9000}\n"
      "rules: [{name: per-ip, key: ip, capacity: 10, period: 1s}]\n",
      "min.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->store.type, "memory");
  EXPECT_EQ(c->rules[0].limit.tokens, 10);  // tokens default to capacity
  EXPECT_EQ(c->admin_listen, (Endpoint{"127.0.0.1", 9901}));
  EXPECT_GE(c->threads, 1u);
}

TEST(ConfigTest, ConnectionAndResponseLimits) {
  Result<Config> c = ParseConfig(
      "max_connections: 100\n"
      "upstream: {address: 127.0.0.1:9000, max_response_bytes: 1024, idle_timeout: 5s}\n"
      "rules: []\n",
      "limits.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->max_connections, 100u);
  EXPECT_EQ(c->over_limit_cache_keys, 0u);  // off unless asked for
  EXPECT_EQ(config::LimiterOptionsOf(*c).over_limit_cache, nullptr);
  EXPECT_EQ(c->upstream.max_response_bytes, 1024u);
  EXPECT_EQ(c->upstream.idle_timeout, std::chrono::seconds(5));
}

TEST(ConfigTest, AlgorithmsAllOrNothingAndHashTags) {
  Result<Config> c = ParseConfig(
      "upstream: {address: 127.0.0.1:9000}\n"
      "policy: all-or-nothing\n"
      "hash_tag_values: true\n"
      "rules: [{name: r, key: ip, capacity: 5, period: 1s, algorithm: gcra},\n"
      "        {name: w, key: key, capacity: 5, period: 1s, algorithm: fixed-window}]\n",
      "c");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->rules[0].algorithm, Algorithm::kGcra);
  EXPECT_EQ(c->rules[1].algorithm, Algorithm::kFixedWindow);
  const LimiterOptions options = config::LimiterOptionsOf(*c);
  EXPECT_EQ(options.policy, MultiRulePolicy::kAllOrNothing);
  EXPECT_TRUE(options.hash_tag_values);
}

TEST(ConfigTest, LocalCounting) {
  Result<Config> c = ParseConfig(
      "upstream: {address: 127.0.0.1:9000}\n"
      "rules: [{name: s, key: ip, capacity: 5, period: 1s, counting: synced, sync_interval: 2s},\n"
      "        {name: l, key: key, capacity: 50, period: 1s, counting: leased,\n"
      "         lease: {max_fraction: 0.25, ttl: 500ms}},\n"
      "        {name: d, key: tenant, capacity: 5, period: 1s}]\n",
      "c");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->rules[0].counting, (LocalCounting{Counting::kSynced, 2000, 0.1, 1000}));
  EXPECT_EQ(c->rules[1].counting, (LocalCounting{Counting::kLeased, 1000, 0.25, 500}));
  EXPECT_EQ(c->rules[2].counting.mode, Counting::kShared);
}

TEST(ConfigTest, OverLimitCache) {
  for (const auto& [yaml, keys] : {std::pair{"over_limit_cache: {}\n", size_t{100'000}},
                                   std::pair{"over_limit_cache: {max_keys: 50}\n", size_t{50}}}) {
    Result<Config> c =
        ParseConfig(std::string(yaml) + "upstream: {address: 127.0.0.1:9000}\nrules: []\n", "c");
    ASSERT_TRUE(c.ok()) << c.status().message();
    EXPECT_EQ(c->over_limit_cache_keys, keys);
    EXPECT_NE(config::LimiterOptionsOf(*c).over_limit_cache, nullptr);
  }
}

TEST(ConfigTest, DebugTop) {
  const std::string rest = "upstream: {address: 127.0.0.1:9000}\nrules: []\n";
  Result<Config> defaults = ParseConfig(rest, "c");
  ASSERT_TRUE(defaults.ok()) << defaults.status().message();
  EXPECT_EQ(defaults->debug_top, (DebugTopConfig{20, false}));
  Result<Config> c = ParseConfig("debug_top: {size: 5, reveal_keys: true}\n" + rest, "c");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->debug_top, (DebugTopConfig{5, true}));
  Result<Config> off = ParseConfig("debug_top: {size: 0}\n" + rest, "c");
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_EQ(off->debug_top.size, 0u);
  for (const char* bad : {"debug_top: {size: 1001}\n", "debug_top: {size: -1}\n",
                          "debug_top: {reveal: true}\n", "debug_top: {reveal_keys: maybe}\n"}) {
    Result<Config> refused = ParseConfig(bad + rest, "c");
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.status().message().find("c:1: debug_top."), std::string::npos)
        << refused.status().message();
  }
}

TEST(ConfigTest, ACostFromTheResponse) {
  Result<Config> c = ParseConfig(
      "upstream: {address: 127.0.0.1:9000}\n"
      "rules: [{name: t, key: key, capacity: 1000, period: 1m,\n"
      "         cost_from: {response_header: X-Usage-Tokens}}]\n",
      "c");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->rules[0].cost_from_header, "X-Usage-Tokens");
  EXPECT_TRUE(c->rules[0].CostReported());
}

TEST(ConfigTest, TheBoundOnBucketsHeldInTheProcess) {
  Result<Config> c = ParseConfig(
      "upstream: {address: 127.0.0.1:9000}\nstore: {type: memory, max_buckets: 5000}\nrules: []\n",
      "c");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->store.max_buckets, 5000u);
  // On Redis it bounds the buckets of synced and leased rules, counted in the process.
  Result<Config> redis = ParseConfig(
      "upstream: {address: 127.0.0.1:9000}\nstore: {type: redis, url: 'redis://a', max_buckets: "
      "5}\nrules: []\n",
      "c");
  ASSERT_TRUE(redis.ok()) << redis.status().message();
  EXPECT_EQ(redis->store.max_buckets, 5u);
  EXPECT_FALSE(ParseConfig("upstream: {address: 127.0.0.1:9000}\nstore: {max_buckets: 0}\nrules: "
                           "[]\n",
                           "c")
                   .ok());
}

TEST(ConfigTest, ClusterStore) {
  Result<Config> c = ParseConfig(
      "store: {type: cluster, nodes: [127.0.0.1:7001, '[::1]:7002'], mode: function,\n"
      "        timeout: 20ms, username: app, password: s3cret, refresh_interval: 5s}\n"
      "upstream: {address: 127.0.0.1:9000}\n"
      "rules:\n"
      "  - {name: r, key: ip, capacity: 5, period: 1s, wait: {replicas: 1, timeout: 10ms}}\n",
      "cluster.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->store.type, "cluster");
  const ClusterOptions& cluster = ClusterOf(c->store);
  ASSERT_EQ(cluster.seeds.size(), 2u);
  EXPECT_EQ(cluster.seeds[0], (std::pair<std::string, uint16_t>{"127.0.0.1", 7001}));
  EXPECT_EQ(cluster.seeds[1], (std::pair<std::string, uint16_t>{"::1", 7002}));
  EXPECT_EQ(cluster.mode, ScriptMode::kFunction);
  EXPECT_EQ(cluster.timeout, std::chrono::milliseconds(20));
  EXPECT_EQ(cluster.username, "app");
  EXPECT_EQ(cluster.password, "s3cret");
  EXPECT_EQ(cluster.refresh_interval, std::chrono::milliseconds(5000));
  EXPECT_EQ(c->rules[0].wait, (ReplicaWait{1, 10}));
  EXPECT_EQ(c->rules[0].algorithm, Algorithm::kTokenBucket);
}

struct BadConfig {
  const char* name;
  const char* yaml;
  const char* expected;  // a part of the message: file, line and field
};

class ConfigRejectsTest : public ::testing::TestWithParam<BadConfig> {};

INSTANTIATE_TEST_SUITE_P(
    BadInput, ConfigRejectsTest,
    ::testing::Values(
        BadConfig{"Empty", "", "bad.yaml: the file is empty"},
        BadConfig{"NotYaml", "upstream: [unclosed", "bad.yaml:1"},
        BadConfig{"NoUpstream", "rules: []\n",
                  "bad.yaml:1: needs an upstream (for the proxy), check_listen (the check API "
                  "alone) or rls"},
        BadConfig{"ListenWithoutUpstream",
                  "check_listen: 127.0.0.1:8081\nlisten: 127.0.0.1:8080\nrules: []\n",
                  "bad.yaml:2: listen: needs an upstream to forward to"},
        BadConfig{"UnknownField", "upstream: {address: a:1}\nrulez: []\n",
                  "bad.yaml:2: rulez: unknown field"},
        BadConfig{"BadListen", "listen: 8080\nupstream: {address: a:1}\nrules: []\n",
                  "bad.yaml:1: listen: \"8080\" has no port"},
        BadConfig{
            "ZeroCapacity",
            "upstream: {address: a:1}\nrules:\n  - {name: r, key: ip, capacity: 0, period: 1s}\n",
            "bad.yaml:3: rules[0].capacity: must be between 1"},
        BadConfig{
            "BadPeriod",
            "upstream: {address: a:1}\nrules:\n  - {name: r, key: ip, capacity: 5, period: 1w}\n",
            "bad.yaml:3: rules[0].period: bad duration \"1w\""},
        BadConfig{
            "ZeroPeriod",
            "upstream: {address: a:1}\nrules:\n  - {name: r, key: ip, capacity: 5, period: 0s}\n",
            "period is 0"},
        BadConfig{"BadKey",
                  "upstream: {address: a:1}\nrules:\n  - {name: r, key: cookie, capacity: 5, "
                  "period: 1s}\n",
                  "rules[0].key: \"cookie\" is not one of"},
        BadConfig{
            "DuplicateName",
            "upstream: {address: a:1}\nrules:\n  - {name: r, key: ip, capacity: 5, period: 1s}\n"
            "  - {name: r, key: key, capacity: 5, period: 1s}\n",
            "bad.yaml:4: rules[1].name: another rule is named \"r\""},
        BadConfig{
            "SharedBucket",
            "upstream: {address: a:1}\nrules:\n  - {name: a, key: ip, capacity: 5, period: 1s}\n"
            "  - {name: b, key: ip, capacity: 9, period: 1h}\n",
            "give it its own `bucket:` name"},
        BadConfig{"BadPolicy", "upstream: {address: a:1}\npolicy: some\nrules: []\n",
                  "bad.yaml:2: policy: \"some\" is not one of charge-all | stop-at-first | refund"},
        BadConfig{"BadCidr",
                  "upstream: {address: a:1}\nclient: {trusted_proxies: [10.0.0.0/33]}\nrules: []\n",
                  "client.trusted_proxies[0]: \"10.0.0.0/33\" has a bad prefix length"},
        BadConfig{"BadRedisUrl",
                  "upstream: {address: a:1}\nstore: {type: redis, url: http://x}\nrules: []\n",
                  "store.url: a store URL starts with redis://, rediss://, unix:// or sentinel://"},
        BadConfig{"RedisWithoutUrl", "upstream: {address: a:1}\nstore: {type: redis}\nrules: []\n",
                  "store: a redis store needs a url"},
        BadConfig{
            "BadOverride",
            "upstream: {address: a:1}\nrules:\n  - {name: r, key: key, capacity: 5, period: 1s,\n"
            "     overrides: {ak: {capacity: -1}}}\n",
            "rules[0].overrides.ak.capacity: must be between 1"},
        BadConfig{"HugeNumber",
                  "upstream: {address: a:1}\nrules:\n  - {name: r, key: ip, capacity: "
                  "99999999999999999999, period: 1s}\n",
                  "rules[0].capacity: must be a whole number"},
        BadConfig{"ZeroIdleTimeout", "upstream: {address: a:1, idle_timeout: 0s}\nrules: []\n",
                  "bad.yaml:1: upstream.idle_timeout: must be more than 0"},
        BadConfig{"ZeroConnections", "max_connections: 0\nupstream: {address: a:1}\nrules: []\n",
                  "bad.yaml:1: max_connections: must be between 1"},
        BadConfig{"ClusterWithoutNodes",
                  "upstream: {address: a:1}\nstore: {type: cluster}\nrules: []\n",
                  "store: a cluster store needs nodes"},
        BadConfig{"ClusterBadNode",
                  "upstream: {address: a:1}\nstore: {type: cluster, nodes: [a:b]}\nrules: []\n",
                  "store.nodes[0]: an address must be host:port, with a port from 1 to 65535"},
        BadConfig{"ClusterWithUrl",
                  "upstream: {address: a:1}\nstore: {type: cluster, nodes: [a:1], url: "
                  "'redis://a'}\nrules: []\n",
                  "store.url: applies only to a redis store"},
        BadConfig{"RedisWithNodes",
                  "upstream: {address: a:1}\nstore: {type: redis, url: 'redis://a', nodes: "
                  "[a:1]}\nrules: []\n",
                  "store.nodes: applies only to a cluster store"},
        BadConfig{"WaitWithoutTimeout",
                  "upstream: {address: a:1}\nrules:\n  - {name: r, key: ip, capacity: 5, period: "
                  "1s, wait: {replicas: 1}}\n",
                  "rules[0].wait: needs replicas and timeout"},
        BadConfig{"WaitLongerThanTheStore",
                  "upstream: {address: a:1}\nstore: {type: redis, url: 'redis://a', timeout: "
                  "50ms}\nrules:\n  - {name: r, key: ip, capacity: 5, period: 1s, wait: "
                  "{replicas: 1, timeout: 30ms}}\n",
                  "rules[0].wait: its timeout must be at most half the store's timeout (50 ms)"},
        BadConfig{"WaitOnMemory",
                  "upstream: {address: a:1}\nrules:\n  - {name: r, key: ip, capacity: 5, period: "
                  "1s, wait: {replicas: 1, timeout: 1ms}}\n",
                  "rules[0].wait: the memory store has no replicas"},
        BadConfig{"UnknownAlgorithm",
                  "upstream: {address: a:1}\nrules:\n  - {name: r, key: ip, capacity: 5, period: "
                  "1s, algorithm: leaky}\n",
                  "rules[0].algorithm: \"leaky\" is not one of token-bucket | gcra | fixed-window"},
        BadConfig{"FixedWindowWithARefillRate",
                  "upstream: {address: a:1}\nrules:\n  - {name: r, key: ip, capacity: 5, tokens: "
                  "3, period: 1s, algorithm: fixed-window}\n",
                  "tokens (3) must equal capacity (5)"},
        BadConfig{"LeasedGcra",
                  "upstream: {address: a:1}\nrules:\n  - {name: r, key: ip, capacity: 5, period: "
                  "1s, counting: leased, algorithm: gcra}\n",
                  "synced and leased counting need the token-bucket algorithm"},
        BadConfig{"LeaseFractionOverOne",
                  "upstream: {address: a:1}\nrules:\n  - {name: r, key: ip, capacity: 5, period: "
                  "1s, counting: leased, lease: {max_fraction: 1.5}}\n",
                  "rules[0].lease.max_fraction: must be more than"},
        BadConfig{"SyncIntervalWithoutSynced",
                  "upstream: {address: a:1}\nrules:\n  - {name: r, key: ip, capacity: 5, period: "
                  "1s, sync_interval: 1s}\n",
                  "rules[0].sync_interval: needs counting: synced"},
        BadConfig{"CostFromAGcraRule",
                  "upstream: {address: a:1}\nrules:\n  - {name: r, key: ip, capacity: 5, period: "
                  "1s, algorithm: gcra, cost_from: {response_header: X-Used}}\n",
                  "a cost reported after the fact needs a token bucket counted in the store"},
        BadConfig{"CostFromWithoutAHeader",
                  "upstream: {address: a:1}\nrules:\n  - {name: r, key: ip, capacity: 5, period: "
                  "1s, cost_from: {}}\n",
                  "rules[0].cost_from: needs response_header"},
        BadConfig{"ShadowNotBool",
                  "upstream: {address: a:1}\nrules:\n  - {name: r, key: ip, capacity: 5, period: "
                  "1s, shadow: maybe}\n",
                  "rules[0].shadow: must be true or false"}),
    [](const auto& info) { return info.param.name; });

TEST_P(ConfigRejectsTest, NamingFileLineAndField) {
  Result<Config> c = ParseConfig(GetParam().yaml, "bad.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(GetParam().expected), std::string::npos)
      << c.status().message();
}

TEST(ConfigTest, MissingFileIsAClearError) {
  Result<Config> c = LoadConfig("/nonexistent/sluice.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "/nonexistent/sluice.yaml: cannot be read: No such file or directory");
  Result<Config> folder = LoadConfig(SLUICE_SOURCE_DIR);
  ASSERT_FALSE(folder.ok());
  EXPECT_EQ(folder.status().message(),
            std::string(SLUICE_SOURCE_DIR) + ": cannot be read: Is a directory");
}

}  // namespace
}  // namespace sluice::config
