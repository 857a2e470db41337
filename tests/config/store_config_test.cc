// The `store` block for Redis as it is run in production: TLS, Sentinel, Unix sockets, and
// credentials from the environment or a file, each given once.
#include <gtest/gtest.h>

#include <cstdlib>

#include "config/config.h"
#include "config/store_options.h"

namespace sluice::config {
namespace {

Result<Config> ParseWithStore(const std::string& store) {
  return ParseConfig("upstream: {address: 127.0.0.1:9000}\nrules: []\nstore:\n" + store,
                     "sluice.yaml");
}

TEST(StoreConfigTest, RedissWithTheTlsBlock) {
  Result<Config> c = ParseWithStore(
      "  type: redis\n"
      "  url: rediss://redis.internal:6380/2\n"
      "  username: sluice\n"
      "  password_file: /run/secrets/redis\n"
      "  tls: {ca_file: /etc/sluice/ca.pem, cert_file: /etc/sluice/client.pem,\n"
      "        key_file: /etc/sluice/client.key, server_name: redis.example, verify: true}\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  const RedisOptions& redis = RedisOf(c->store);
  EXPECT_EQ(redis.host, "redis.internal");
  EXPECT_EQ(redis.port, 6380);
  EXPECT_EQ(redis.db, 2);
  EXPECT_EQ(redis.username, "sluice");
  EXPECT_EQ(redis.password, "");
  EXPECT_EQ(redis.password_file, "/run/secrets/redis");
  ASSERT_TRUE(redis.tls);
  EXPECT_EQ(*redis.tls, (TlsOptions{"/etc/sluice/ca.pem", "/etc/sluice/client.pem",
                                    "/etc/sluice/client.key", "redis.example", true}));
}

TEST(StoreConfigTest, RedissAloneIsTlsWithTheDefaults) {
  Result<Config> c = ParseWithStore("  {type: redis, url: 'rediss://r:6380'}\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(RedisOf(c->store).tls, TlsOptions{});
}

TEST(StoreConfigTest, BucketLayout) {
  Result<Config> hash = ParseWithStore("  {type: redis, url: 'redis://r:6379'}\n");
  ASSERT_TRUE(hash.ok()) << hash.status().message();
  EXPECT_EQ(RedisOf(hash->store).layout, BucketLayout::kHash);  // the design's, by default
  Result<Config> compact =
      ParseWithStore("  {type: redis, url: 'redis://r:6379', layout: compact}\n");
  ASSERT_TRUE(compact.ok()) << compact.status().message();
  EXPECT_EQ(RedisOf(compact->store).layout, BucketLayout::kCompact);
  Result<Config> cluster =
      ParseWithStore("  {type: cluster, nodes: ['127.0.0.1:7001'], layout: compact}\n");
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  EXPECT_EQ(ClusterOf(cluster->store).layout, BucketLayout::kCompact);
  Result<Config> wrong = ParseWithStore("  {type: redis, url: 'redis://r:6379', layout: packed}\n");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("layout"), std::string::npos) << wrong.status().message();
  Result<Config> memory = ParseWithStore("  {type: memory, layout: compact}\n");
  EXPECT_FALSE(memory.ok());
}

TEST(StoreConfigTest, UnixSocket) {
  Result<Config> c = ParseWithStore(
      "  {type: redis, url: 'unix:///run/redis/redis.sock?db=3', "
      "password: pw}\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(RedisOf(c->store).unix_path, "/run/redis/redis.sock");
  EXPECT_EQ(RedisOf(c->store).db, 3);
  EXPECT_EQ(RedisOf(c->store).password, "pw");
}

TEST(StoreConfigTest, Sentinel) {
  Result<Config> c = ParseWithStore(
      "  type: sentinel\n"
      "  sentinels: [10.0.0.1:26379, 10.0.0.2:26379, '[::1]:26379']\n"
      "  master: mymaster\n"
      "  db: 1\n"
      "  password: master-pw\n"
      "  sentinel_username: watcher\n"
      "  sentinel_password_file: /run/secrets/sentinel\n"
      "  tls: {ca_file: ca.pem}\n"
      "  timeout: 20ms\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->store.type, "sentinel");
  const RedisOptions& redis = RedisOf(c->store);
  ASSERT_TRUE(redis.sentinel);
  EXPECT_EQ(redis.sentinel->sentinels,
            (std::vector<HostPort>{{"10.0.0.1", 26379}, {"10.0.0.2", 26379}, {"::1", 26379}}));
  EXPECT_EQ(redis.sentinel->master, "mymaster");
  EXPECT_EQ(redis.sentinel->username, "watcher");
  EXPECT_EQ(redis.sentinel->password_file, "/run/secrets/sentinel");
  EXPECT_EQ(redis.db, 1);
  EXPECT_EQ(redis.password, "master-pw");
  EXPECT_EQ(redis.tls->ca_file, "ca.pem");
  EXPECT_EQ(redis.timeout, std::chrono::milliseconds(20));
  EXPECT_EQ(c->store.settings->Timeout(), std::chrono::milliseconds(20));
}

TEST(StoreConfigTest, ClusterOverTls) {
  Result<Config> c = ParseWithStore(
      "  {type: cluster, nodes: [10.0.0.1:7001], password_file: /s, tls: {ca_file: ca}}\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(ClusterOf(c->store).tls->ca_file, "ca");
  EXPECT_EQ(ClusterOf(c->store).password_file, "/s");
}

// ${NAME} is the environment variable NAME in any string value of the file; $${ is a literal.
TEST(StoreConfigTest, EnvironmentVariablesInValues) {
  // The environment is changed while this test's thread is the only one.
  setenv("SLUICE_TEST_REDIS_PASSWORD", "from-the-environment", 1);  // NOLINT(concurrency-mt-unsafe)
  setenv("SLUICE_TEST_REDIS_HOST", "redis.internal", 1);            // NOLINT(concurrency-mt-unsafe)
  Result<Config> c = ParseWithStore(
      "  type: redis\n"
      "  url: redis://${SLUICE_TEST_REDIS_HOST}:6379\n"
      "  password: ${SLUICE_TEST_REDIS_PASSWORD}\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(RedisOf(c->store).host, "redis.internal");
  EXPECT_EQ(RedisOf(c->store).password, "from-the-environment");
  Result<Config> literal =
      ParseWithStore("  {type: redis, url: 'redis://h', password: 'a$${b}'}\n");
  ASSERT_TRUE(literal.ok()) << literal.status().message();
  EXPECT_EQ(RedisOf(literal->store).password, "a${b}");
}

TEST(StoreConfigTest, AnUnsetVariableNamesTheFileLineFieldAndVariable) {
  unsetenv("SLUICE_TEST_UNSET");  // NOLINT(concurrency-mt-unsafe): the test's only thread
  Result<Config> c =
      ParseWithStore("  type: redis\n  url: redis://h\n  password: ${SLUICE_TEST_UNSET}\n");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "sluice.yaml:6: store.password: ${SLUICE_TEST_UNSET} is not set");
}

struct BadStore {
  const char* name;
  const char* store;
  const char* expected;
};
void PrintTo(const BadStore& bad, std::ostream* os) { *os << bad.name; }

class StoreConfigRejectsTest : public ::testing::TestWithParam<BadStore> {};

TEST_P(StoreConfigRejectsTest, WithAClearMessage) {
  Result<Config> c = ParseWithStore(GetParam().store);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(GetParam().expected), std::string::npos)
      << c.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    BadInput, StoreConfigRejectsTest,
    ::testing::Values(
        BadStore{"PasswordInUrlAndField",
                 "  {type: redis, url: 'redis://:pw@h', password: other}\n",
                 "store.password: is given twice: in the url and here"},
        BadStore{"PasswordInUrlAndFile",
                 "  {type: redis, url: 'redis://:pw@h', password_file: /f}\n",
                 "store.password_file: is given twice: in the url and here"},
        BadStore{"UserInUrlAndField", "  {type: redis, url: 'redis://u:p@h', username: v}\n",
                 "store.username: is given twice"},
        BadStore{"PasswordAndFile",
                 "  {type: redis, url: 'redis://h', password: a, password_file: /f}\n",
                 "store.password_file: is given beside password; give one of them"},
        BadStore{"SentinelPasswordAndFile",
                 "  {type: sentinel, sentinels: [h:1], master: m, sentinel_password: a,\n"
                 "   sentinel_password_file: /f}\n",
                 "store.sentinel_password_file: is given beside sentinel_password"},
        BadStore{"TlsOnPlainRedis", "  {type: redis, url: 'redis://h', tls: {ca_file: x}}\n",
                 "store.tls: applies to rediss:// URLs"},
        BadStore{"TlsOnUnix", "  {type: redis, url: 'unix:///s.sock', tls: {}}\n",
                 "store.tls: applies to rediss:// URLs"},
        BadStore{"CertWithoutKey", "  {type: redis, url: 'rediss://h', tls: {cert_file: c}}\n",
                 "store.tls.cert_file: cert_file and key_file go together"},
        BadStore{"TlsUnknownField", "  {type: redis, url: 'rediss://h', tls: {ca: c}}\n",
                 "store.tls.ca: unknown field"},
        BadStore{"SentinelWithoutMaster", "  {type: sentinel, sentinels: [h:1]}\n",
                 "store: a sentinel store needs master"},
        BadStore{"SentinelWithoutSentinels", "  {type: sentinel, master: m}\n",
                 "store: a sentinel store needs sentinels"},
        BadStore{"SentinelBadAddress", "  {type: sentinel, master: m, sentinels: [h]}\n",
                 "store.sentinels[0]: an address must be host:port"},
        BadStore{"SentinelUrlOnRedis", "  {type: redis, url: 'sentinel://h:1/m'}\n",
                 "store.url: a sentinel:// URL goes with type: sentinel"},
        BadStore{"SentinelFieldOnRedis", "  {type: redis, url: 'redis://h', master: m}\n",
                 "store.master: applies only to a sentinel store"},
        BadStore{"UrlOnSentinel", "  {type: sentinel, sentinels: [h:1], master: m, url: x}\n",
                 "store.url: applies only to a redis store"},
        BadStore{"PasswordOnMemory", "  {type: memory, password: x}\n",
                 "store.password: applies only to a redis, sentinel or cluster store"},
        BadStore{"UnixRelative", "  {type: redis, url: 'unix://redis.sock'}\n",
                 "a unix URL names an absolute path"},
        BadStore{"UnclosedVariable", "  {type: redis, url: 'redis://h', password: '${X'}\n",
                 "store.password: \"${\" without its \"}\""},
        BadStore{"BadVariableName", "  {type: redis, url: 'redis://h', password: '${1X}'}\n",
                 "store.password: ${1X} is not a variable name"}),
    [](const auto& info) { return info.param.name; });

// A URL that cannot be read is refused without being repeated: it may hold the password.
TEST(StoreConfigTest, ABadUrlIsNeverRepeated) {
  for (const char* url : {"'redis://:hunter2@h:x'", "'rediss://:hunter2@'", "'hunter2'",
                          "'redis://:hunter2@h/abc'", "'sentinel://:hunter2@h:1'"}) {
    Result<Config> c = ParseWithStore(std::string("  {type: redis, url: ") + url + "}\n");
    ASSERT_FALSE(c.ok()) << url;
    EXPECT_EQ(c.status().message().find("hunter2"), std::string::npos) << c.status().message();
  }
}

}  // namespace
}  // namespace sluice::config
