// `sluice serve` as users run it, for what it counts: gateways sharing a store, local counts,
// the failure policy, reloads and the drain. Real processes (gateways, the demo upstream,
// redis-server) on loopback ports, driven over HTTP. How it speaks HTTP is in
// gateway_http_test.cc.
#include <gtest/gtest.h>
#include <csignal>

#include <chrono>
#include <future>

#include "e2e/kept_alive_connection.h"
#include "e2e/processes.h"
#include "support/redis_cluster.h"

namespace sluice {
namespace {

using e2e::CheckConfig;
using e2e::GatewayProcess;
using e2e::Healthy;
using e2e::KeptAliveConnection;
using e2e::Ready;
using e2e::Reloads;
using e2e::Upstream;
using e2e::WaitUntil;
using std::chrono::milliseconds;
using testing::Fetch;
using testing::HttpResult;
using testing::RedisCluster;
using testing::RedisServer;

// These tests count every call: the store's timeout is one that a call on a loaded machine
// (ctest runs four tests at a time on two cores) does not reach, since a call timed out is a
// count lost or admitted by the failure policy.
std::string RedisStore(const RedisServer& redis, const std::string& failure = "open") {
  return "store: {type: redis, url: 'redis://127.0.0.1:" + std::to_string(redis.port()) +
         "', timeout: 2s}\nfailure: " + failure + "\n";
}

TEST(GatewayE2eTest, ThreeGatewaysOneRedisAdmitExactlyTheLimit) {
  RedisServer redis;
  Upstream upstream;
  const std::string config =
      RedisStore(redis) + "rules:\n  - {name: per-key, key: key, capacity: 100, period: 1h}\n";
  std::vector<std::unique_ptr<GatewayProcess>> gateways(3);
  for (auto& gateway : gateways)
    gateway = std::make_unique<GatewayProcess>(upstream.port(), config);
  int ok = 0;
  int limited = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) {
    HttpResult r = gateways[i % 3]->Get("/api/orders", {{"X-Api-Key", "ak_abc123"}});
    if (r.status == 200) {
      ++ok;
    } else if (r.status == 429) {
      ++limited;
      // One token every 36 s, less what has come back since the first request (a slow run, as
      // under a sanitizer, takes seconds).
      const auto since_start = std::chrono::duration_cast<std::chrono::seconds>(
          std::chrono::steady_clock::now() - start);
      EXPECT_LE(std::stoi(r.Header("retry-after")), 36);
      EXPECT_GE(std::stoi(r.Header("retry-after")), 36 - since_start.count() - 1);
      EXPECT_EQ(r.Header("x-ratelimit-remaining"), "0");
      EXPECT_EQ(r.Header("ratelimit-policy"), "\"per-key\";q=100;w=3600");
      EXPECT_NE(r.body.find("\"rule\":\"per-key\""), std::string::npos);
    }
  }
  EXPECT_EQ(ok, 100);
  EXPECT_EQ(limited, 100);
}

// The same over a Redis Cluster, with three rules whose buckets live on different shards.
TEST(GatewayE2eTest, TwoGatewaysOneClusterAdmitExactlyTheLimit) {
  RedisCluster cluster(3, 0);
  Upstream upstream;
  std::string config = "store: {type: cluster, timeout: 200ms, nodes: [127.0.0.1:" +
                       std::to_string(cluster.ports()[0]) + "]}\n" +
                       "client: {tenant_header: X-Tenant-Id}\n"
                       "rules:\n"
                       "  - {name: per-ip, key: ip, capacity: 1000, period: 1h}\n"
                       "  - {name: per-key, key: key, capacity: 100, period: 1h}\n"
                       "  - {name: per-tenant, key: tenant, capacity: 1000, period: 1h}\n";
  GatewayProcess a(upstream.port(), config);
  GatewayProcess b(upstream.port(), config);
  int ok = 0;
  for (int i = 0; i < 150; ++i) {
    HttpResult r =
        (i % 2 == 0 ? a : b).Get("/", {{"X-Api-Key", "ak_abc123"}, {"X-Tenant-Id", "org_acme"}});
    if (r.status == 200) ++ok;
    if (i >= 100) {
      EXPECT_EQ(r.status, 429);
      EXPECT_NE(r.body.find("\"rule\":\"per-key\""), std::string::npos) << r.body;
    }
  }
  EXPECT_EQ(ok, 100);
}

// Two gateways leasing tokens from one bucket: never more than the limit between them, far
// fewer calls to Redis than requests, and what they hold goes back to Redis when they stop.
TEST(GatewayE2eTest, TwoGatewaysLeasingFromOneRedisNeverExceedTheLimit) {
  RedisServer redis;
  Upstream upstream;
  const std::string config = RedisStore(redis) +
                             "rules:\n  - {name: per-key, key: key, capacity: 100, period: 1h, "
                             "counting: leased, lease: {max_fraction: 0.2, ttl: 1h}}\n";
  GatewayProcess a(upstream.port(), config);
  GatewayProcess b(upstream.port(), config);
  int ok = 0;
  for (int i = 0; i < 160; ++i) {
    HttpResult r = (i % 2 == 0 ? a : b).Get("/", {{"X-Api-Key", "ak_lease"}});
    if (r.status == 200) ++ok;
  }
  EXPECT_LE(ok, 100);
  EXPECT_GE(ok, 60);
  const std::string stats = redis.Client()->String({"INFO", "commandstats"});
  const size_t at = stats.find("cmdstat_evalsha:calls=");
  ASSERT_NE(at, std::string::npos);
  EXPECT_LT(std::stol(stats.substr(at + 22)), 40) << "leases, not a call a request";
  const std::string metrics = Fetch(a.admin(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("sluice_local_decisions_total"), std::string::npos) << metrics;

  for (GatewayProcess* g : {&a, &b}) {
    g->process().Signal(SIGTERM);
    EXPECT_EQ(g->process().Wait(milliseconds(5000)), 0);
  }
  const std::string tokens = redis.Client()->String({"HGET", "rl:key:ak_lease", "tokens"});
  EXPECT_EQ(std::stoi(tokens), 100 - ok) << "every token leased and not spent goes back";
}

// A gateway counting locally sends what it counted when it stops, and stops cleanly (the sanitizer
// build also holds it to leaving nothing allocated behind).
TEST(GatewayE2eTest, ASyncedGatewaySendsItsCountsWhenItStops) {
  RedisServer redis;
  Upstream upstream;
  GatewayProcess gateway(upstream.port(),
                         RedisStore(redis) +
                             "rules:\n  - {name: per-key, key: key, capacity: 100, period: 1h, "
                             "counting: synced, sync_interval: 1h}\n");
  EXPECT_NE(CheckConfig(gateway.ConfigPath()).find(": ok ("), std::string::npos)
      << "check-config accepts what serve runs";
  // Connected first: a count the store never had (its bucket's first call failed, and so did
  // the flush) is what this test looks for.
  ASSERT_TRUE(WaitUntil([&] { return Ready(gateway.admin()); }));
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(gateway.Get("/", {{"X-Api-Key", "ak_synced"}}).status, 200);
  }
  gateway.process().Signal(SIGTERM);
  EXPECT_EQ(gateway.process().Wait(milliseconds(5000)), 0);
  const std::string tokens = redis.Client()->String({"HGET", "rl:key:ak_synced", "tokens"});
  EXPECT_EQ(std::stoi(tokens), 90) << "the 10 admitted reached Redis";
}

// Once Redis has said no for a key, the gateway answers that key's next requests itself until
// the retry time: Redis sees no further call.
TEST(GatewayE2eTest, OverLimitCacheSparesTheStore) {
  RedisServer redis;
  Upstream upstream;
  GatewayProcess gateway(upstream.port(), RedisStore(redis) +
                                              "over_limit_cache: {max_keys: 1000}\n" +
                                              "rules:\n  - {name: per-key, key: key, capacity: 2, "
                                              "period: 1h}\n");
  auto calls = [&] {
    const std::string stats = redis.Client()->String({"INFO", "commandstats"});
    const size_t at = stats.find("cmdstat_evalsha:calls=");
    return at == std::string::npos ? 0 : std::stol(stats.substr(at + 22));
  };
  for (int i = 0; i < 3; ++i) gateway.Get("/", {{"X-Api-Key", "hot"}});
  const long before = calls();
  for (int i = 0; i < 20; ++i) {
    HttpResult r = gateway.Get("/", {{"X-Api-Key", "hot"}});
    EXPECT_EQ(r.status, 429);
    // Half an hour for a token, rounded up: the script's doubles make 1 / (2 / 3,600,000 ms) a
    // hair over 1,800,000 when the bucket was emptied in the same millisecond, hence 1801.
    EXPECT_TRUE(r.Header("retry-after") == "1800" || r.Header("retry-after") == "1801")
        << r.Header("retry-after");
  }
  EXPECT_EQ(calls(), before) << "rejections from the cache must not reach Redis";
  EXPECT_EQ(gateway.Get("/", {{"X-Api-Key", "cold"}}).status, 200);
  EXPECT_EQ(calls(), before + 1);
  const std::string metrics = Fetch(gateway.admin(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("sluice_over_limit_cache_rejections_total 20"), std::string::npos)
      << metrics;
}

// Which client the rules count, trusted proxies or not, is tested in-process
// (tests/http/gateway_check_api_test.cc); here, what the upstream is told.
TEST(GatewayE2eTest, TheUpstreamSeesTheForwardedChainWithThePeerAppended) {
  Upstream upstream;
  GatewayProcess trusted(upstream.port(),
                         "client: {trusted_proxies: [127.0.0.1/32]}\n"
                         "rules:\n  - {name: per-ip, key: ip, capacity: 1, period: 1h}\n");
  HttpResult r = trusted.Get("/", {{"X-Forwarded-For", "198.51.100.3"}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("x-seen-forwarded-for"), "198.51.100.3, 127.0.0.1");
}

TEST(GatewayE2eTest, FailurePolicyWhileRedisIsDownAndRecovery) {
  RedisServer redis;
  Upstream upstream;
  const std::string rules = "rules:\n  - {name: per-key, key: key, capacity: 100, period: 1h}\n";
  GatewayProcess open(upstream.port(), RedisStore(redis, "open") + rules);
  GatewayProcess closed(upstream.port(), RedisStore(redis, "closed") + rules);
  ASSERT_TRUE(WaitUntil([&] { return Ready(open.admin()) && Ready(closed.admin()); }));
  EXPECT_EQ(open.Get("/", {{"X-Api-Key", "k"}}).status, 200);
  redis.Kill();
  EXPECT_EQ(open.Get("/", {{"X-Api-Key", "k"}}).status, 200);
  EXPECT_EQ(closed.Get("/", {{"X-Api-Key", "k"}}).status, 503);
  EXPECT_TRUE(WaitUntil([&] { return Fetch(open.admin(), "GET", "/readyz").status == 503; },
                        milliseconds(3000)));
  redis.Start();
  EXPECT_TRUE(WaitUntil(
      [&] {
        return closed.Get("/", {{"X-Api-Key", "k"}}).status == 200;
      },
      milliseconds(5000)));
  const std::string metrics = Fetch(closed.admin(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("sluice_failure_policy_total{decision=\"rejected\"}"), std::string::npos);
}

TEST(GatewayE2eTest, SighupReloadsAGoodFileAndKeepsTheOldOneOnABadFile) {
  Upstream upstream;
  GatewayProcess gateway(upstream.port(),
                         "rules:\n  - {name: per-key, key: key, capacity: 1, period: 1h}\n");
  EXPECT_EQ(gateway.Get("/", {{"X-Api-Key", "a"}}).status, 200);
  EXPECT_EQ(gateway.Get("/", {{"X-Api-Key", "a"}}).status, 429);
  gateway.Write(upstream.port(),
                "rules:\n  - {name: per-key, key: key, capacity: 5, period: 1h}\n");
  gateway.process().Signal(SIGHUP);
  // Bucket "a" keeps its state (empty); a new key sees the new capacity.
  EXPECT_TRUE(WaitUntil(
      [&] {
        return gateway.Get("/", {{"X-Api-Key", "c"}}).Header("x-ratelimit-limit") == "5";
      },
      milliseconds(3000)));
  gateway.Write(upstream.port(),
                "rules:\n  - {name: per-key, key: key, capacity: 0, period: 1h}\n");
  gateway.process().Signal(SIGHUP);
  // The refusal is counted before the old configuration is asserted, so that a reload that never
  // ran cannot pass for one refused.
  ASSERT_TRUE(
      WaitUntil([&] { return Reloads(gateway.admin(), "failure") == 1; }, milliseconds(5000)));
  EXPECT_TRUE(Healthy(gateway.admin()));
  // The old limit of 5 is still in force.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(gateway.Get("/", {{"X-Api-Key", "b"}}).status, 200);
  EXPECT_EQ(gateway.Get("/", {{"X-Api-Key", "b"}}).status, 429);
  // A valid file that changes what the running servers were built with is refused whole.
  gateway.Write(upstream.port(),
                "max_body_bytes: 100\n"
                "rules:\n  - {name: per-key, key: key, capacity: 7, period: 1h}\n");
  gateway.process().Signal(SIGHUP);
  ASSERT_TRUE(
      WaitUntil([&] { return Reloads(gateway.admin(), "failure") == 2; }, milliseconds(5000)));
  EXPECT_NE(gateway.Log().find("reload refused: max_body_bytes needs a restart"),
            std::string::npos);
  EXPECT_EQ(gateway.Get("/", {{"X-Api-Key", "d"}}).Header("x-ratelimit-limit"), "5");
}

// The requests (and rate limit service calls) that the gateway with admin port `admin` is
// handling now.
double InFlight(uint16_t admin) {
  return e2e::MetricValue(Fetch(admin, "GET", "/metrics").body, "sluice_requests_in_flight");
}

TEST(GatewayE2eTest, SigtermDrainsRequestsInFlight) {
  Upstream upstream;
  GatewayProcess gateway(upstream.port(), "rules: []\n");
  auto slow = std::async(std::launch::async, [&] { return gateway.Get("/slow?ms=500"); });
  ASSERT_TRUE(WaitUntil([&] { return InFlight(gateway.admin()) >= 1; }, milliseconds(3000)));
  gateway.process().Signal(SIGTERM);
  HttpResult r = slow.get();
  EXPECT_EQ(r.status, 200) << "a request in flight was cut off";
  EXPECT_EQ(gateway.process().Wait(milliseconds(3000)), 0);
}

// A request whose head completes once the drain is over (here while the gateway waits, for up to
// a second, to send its local counts to a Redis that hangs) is refused with 503, not handled: the
// loops could stop before it ended, after the upstream had it.
TEST(GatewayE2eTest, ARequestBegunAfterTheDrainIsRefused) {
  RedisServer redis;
  Upstream upstream;
  GatewayProcess gateway(
      upstream.port(),
      "store: {type: redis, url: 'redis://127.0.0.1:" + std::to_string(redis.port()) +
          "', timeout: 5s}\nrules:\n  - {name: per-key, key: key, capacity: 100, "
          "period: 1h, counting: synced, sync_interval: 1h}\n");
  ASSERT_TRUE(WaitUntil([&] { return Ready(gateway.admin()); }))
      << "connected to Redis before it hangs";
  // A bucket's first use learns its tokens from Redis; the request after it is a count to send.
  ASSERT_EQ(gateway.Get("/", {{"X-Api-Key", "ak_late"}}).status, 200);
  ASSERT_TRUE(WaitUntil(
      [&] {
        return !redis.Client()->String({"HGET", "rl:key:ak_late", "tokens"}).empty();
      },
      milliseconds(5000)));
  ASSERT_EQ(gateway.Get("/", {{"X-Api-Key", "ak_late"}}).status, 200);
  KeptAliveConnection connection(gateway.proxy());
  boost::beast::error_code ec;
  // A request of its own first (no key, so no count): the connection is the gateway's, kept
  // alive, before the drain.
  ASSERT_TRUE(connection.Write("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_EQ(connection.Read(ec).result_int(), 200) << ec.message();
  // All of the next head but its last byte, which comes once the drain is over: the gateway
  // then waits, for up to a second, to send its count to a Redis that hangs.
  const std::string head = "GET / HTTP/1.1\r\nHost: x\r\nX-Api-Key: ak_late\r\n\r\n";
  ASSERT_TRUE(connection.Write(std::string_view(head).substr(0, head.size() - 1)));
  redis.Pause();
  gateway.process().Signal(SIGTERM);
  ASSERT_TRUE(WaitUntil([&] { return gateway.Log().find("stopping") != std::string::npos; },
                        milliseconds(3000)));
  ASSERT_TRUE(WaitUntil([&] { return gateway.Log().find("listeners closed") != std::string::npos; },
                        milliseconds(3000)))
      << "the drain never found nothing in flight";
  ASSERT_TRUE(connection.Write(std::string_view(head).substr(head.size() - 1)));
  const auto refused = connection.Read(ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(refused.result_int(), 503) << refused;
  EXPECT_FALSE(refused.keep_alive());
  redis.Resume();  // before the flush gives up: the count goes, and the gateway exits
  EXPECT_EQ(gateway.process().Wait(milliseconds(3000)), 0);
}

}  // namespace
}  // namespace sluice
