// What `sluice serve` does at the bounds on what it and Redis hold: the local counts at
// store.max_buckets under a flood of distinct clients, with Redis up and then down, and a Redis
// at maxmemory that evicts nothing. Operators see each in /metrics and, at most once every 10 s,
// in the log.
#include <gtest/gtest.h>

#include <string>

#include "e2e/processes.h"

namespace sluice::e2e {
namespace {

using testing::RedisServer;

std::string RedisStore(const RedisServer& redis, const std::string& more = "") {
  return "store: {type: redis, url: 'redis://127.0.0.1:" + std::to_string(redis.port()) +
         "', timeout: 200ms" + more + "}\nfailure: closed\n";
}

// The value of a series (a name, and its labels if any) in /metrics text; -1 when it is not
// there.
long Counter(const std::string& metrics, const std::string& series) {
  const size_t at = metrics.find("\n" + series + " ");
  return at == std::string::npos ? -1 : std::stol(metrics.substr(at + series.size() + 2));
}

bool Logged(const GatewayProcess& gateway, const std::string& line) {
  return WaitUntil([&] { return gateway.Log().find(line) != std::string::npos; },
                   milliseconds(3000));
}

// With Redis up, buckets whose counts Redis has taken make room for new ones; with Redis down,
// every bucket soon owes it, and a new client gets the failure policy (closed: 503) while the
// clients held are still decided locally.
TEST(BoundsE2eTest, TheLocalCountsAtTheirBoundForgetSettledBucketsAndRefuseWhenAllOwe) {
  RedisServer redis;
  Upstream upstream;
  GatewayProcess gateway(upstream.port(),
                         RedisStore(redis, ", max_buckets: 20") +
                             "rules:\n  - {name: per-key, key: key, capacity: 100, period: 1h, "
                             "counting: synced, sync_interval: 100ms}\n");
  // A bucket first seen is synced within a few milliseconds, and owes nothing after that: a new
  // client finds room (should the last few not be synced yet, it is let in once they are).
  for (int i = 0; i < 60; ++i) {
    const std::string key = "up-" + std::to_string(i);
    EXPECT_TRUE(WaitUntil(
        [&] {
          return gateway.Get("/", {{"X-Api-Key", key}}).status == 200;
        },
        milliseconds(2000)))
        << i;
  }
  EXPECT_GE(Counter(Fetch(gateway.admin(), "GET", "/metrics").body,
                    "sluice_local_counting_evictions_total"),
            1);
  EXPECT_TRUE(Logged(gateway, "the local counts are at store.max_buckets: ")) << gateway.Log();

  redis.Kill();
  EXPECT_EQ(gateway.Get("/", {{"X-Api-Key", "held"}}).status, 200);
  int refused = 0;
  for (int i = 0; i < 40; ++i) {
    refused += gateway.Get("/", {{"X-Api-Key", "down-" + std::to_string(i)}}).status == 503;
  }
  EXPECT_GE(refused, 20);
  EXPECT_EQ(gateway.Get("/", {{"X-Api-Key", "held"}}).status, 200) << "decided locally still";
  EXPECT_GE(Counter(Fetch(gateway.admin(), "GET", "/metrics").body,
                    "sluice_local_counting_refusals_total"),
            20);
  EXPECT_TRUE(Logged(gateway, "checks given the failure policy instead of a new bucket"))
      << gateway.Log();
}

// Redis past its maxmemory with noeviction (its default policy) refuses the scripts' writes:
// each check gets the failure policy, and the log says why; once Redis has room, checks count
// again.
TEST(BoundsE2eTest, AFullRedisGivesChecksTheFailurePolicyAndTheLogSaysWhy) {
  RedisServer redis({"--maxmemory-policy", "noeviction"});
  Upstream upstream;
  GatewayProcess gateway(upstream.port(),
                         RedisStore(redis) +
                             "rules:\n  - {name: per-key, key: key, capacity: 100, "
                             "period: 1h}\n");
  ASSERT_EQ(gateway.Get("/", {{"X-Api-Key", "before"}}).status, 200);
  // Two megabytes of other data, then a maxmemory of one: full, whatever a command's size.
  auto client = redis.Client();
  for (int i = 0; i < 32; ++i)
    client->Command({"SET", "junk:" + std::to_string(i), std::string(65536, 'x')});
  client->Command({"CONFIG", "SET", "maxmemory", "1mb"});
  ASSERT_EQ(client->String({"SET", "small", "x"}).rfind("OOM", 0), 0u);

  for (const char* key : {"before", "after"}) {
    EXPECT_EQ(gateway.Get("/", {{"X-Api-Key", key}}).status, 503) << key;
  }
  EXPECT_TRUE(Logged(gateway, "the failure policy decides: store error: OOM command not allowed"))
      << gateway.Log();
  EXPECT_EQ(Counter(Fetch(gateway.admin(), "GET", "/metrics").body,
                    "sluice_store_errors_total{code=\"store_error\"}"),
            2);

  client->Command({"CONFIG", "SET", "maxmemory", "0"});
  EXPECT_EQ(gateway.Get("/", {{"X-Api-Key", "after"}}).status, 200);
}

}  // namespace
}  // namespace sluice::e2e
