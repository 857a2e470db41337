// Faults between the Redis stores and redis-server, injected by a proxy in front of one server,
// one cluster node, and a sentinel setup's master (support/fault_drill.h): for each fault, every
// check gets the failure policy's decision within the store's timeout plus 50 ms, no reply ever
// answers another check, the other shards of a cluster go on, and the store answers again by
// itself soon after the fault ends. The figures go to the test's output (docs/reliability.md).
#include <gtest/gtest.h>

#include <optional>

#include "sluice/cluster_store.h"
#include "sluice/key_slot.h"
#include "sluice/limiter.h"
#include "sluice/redis_store.h"
#include "support/apply_blocking.h"
#include "support/fault_drill.h"
#include "support/redis_cluster.h"
#include "support/redis_sentinels.h"
#include "support/redis_server.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;
using testing::CheckLoad;
using testing::DrillBucket;
using testing::FaultProxy;

Limit LimitOf(const DrillBucket& bucket) {
  return {bucket.capacity, bucket.TokensPerDay(), 86'400'000};
}

// The drill's load through a limiter on `store`: one rule, by API key, whose overrides give each
// bucket its capacity.
class LimiterLoad {
 public:
  LimiterLoad(std::shared_ptr<Store> store, FailurePolicy failure,
              std::vector<std::vector<DrillBucket>> buckets)
      : store_(std::move(store)) {
    Rule rule{"per-key", "key", "", {1000, 1000, 86'400'000}, 1};
    for (const auto& thread_buckets : buckets) {
      for (const DrillBucket& b : thread_buckets) rule.overrides[b.value] = LimitOf(b);
    }
    LimiterOptions options;
    options.failure = failure;
    auto limiter = Limiter::Create({rule}, options, store_);
    EXPECT_TRUE(limiter.ok()) << limiter.status().ToString();
    limiter_ = std::move(limiter).value();
    load_.emplace(
        std::move(buckets),
        [this, failure](size_t, const DrillBucket& b) -> std::optional<int64_t> {
          const Decision d = limiter_->CheckBlocking({{"key", b.value}});
          if (!d.checked) {
            EXPECT_EQ(d.allowed, failure == FailurePolicy::kOpen);
            EXPECT_NE(d.error.code(), StatusCode::kOk);
            return std::nullopt;
          }
          EXPECT_TRUE(d.allowed);
          return d.verdicts.at(0).remaining;
        },
        [this](size_t, const DrillBucket& b) -> int64_t {
          auto replies = testing::ApplyBlocking(*store_, {{"rl:key:" + b.value, LimitOf(b), 0}});
          EXPECT_TRUE(replies.ok()) << replies.status().ToString();
          return replies.ok() ? b.capacity - replies->front().remaining : 0;
        });
  }

  CheckLoad& load() { return *load_; }

 private:
  std::shared_ptr<Store> store_;
  std::unique_ptr<Limiter> limiter_;
  std::optional<CheckLoad> load_;  // last: its threads stop before the limiter goes
};

RedisOptions DrillOptions(RedisOptions options) {
  options.timeout = testing::kDrillTimeout;
  // The reconnection a deployment has, for figures that are a deployment's.
  options.reconnect_min = RedisOptions{}.reconnect_min;
  options.reconnect_max = RedisOptions{}.reconnect_max;
  return options;
}

TEST(RedisFaultTest, EveryFaultBetweenTheStoreAndTheServerIsDecidedInTimeAndRecovered) {
  testing::RedisServer server;
  FaultProxy proxy(server.port());
  RedisOptions options = DrillOptions(server.Options());
  options.port = proxy.port();
  auto store = std::make_shared<RedisStore>(options);
  ASSERT_TRUE(store->WaitReady(std::chrono::seconds(5)));
  LimiterLoad load(store, FailurePolicy::kClosed, testing::DrillBuckets(4, 3, "r"));
  // A reset for 3 s: long enough for the reconnection backoff to reach its 2 s cap.
  std::vector<testing::FaultCase> cases = testing::EveryFault(milliseconds(3000));
  // And a stall past the stall limit (1 s here), as a peer gone without a word: the store drops
  // the connection, and its next one is held too until the stall ends.
  cases.push_back({testing::Fault::kStall, milliseconds(0), milliseconds(1500), false,
                   testing::kDrillRecovery});
  testing::Drill("redis", proxy, load.load(), {true, true, true, true}, cases);
}

TEST(RedisFaultTest, EveryFaultBetweenTheSentinelStoreAndTheMasterIsDecidedInTimeAndRecovered) {
  testing::RedisSentinels setup(1, 3, nullptr, testing::RedisSentinels::MasterReach::kThroughProxy);
  auto store = std::make_shared<RedisStore>(DrillOptions(setup.Options()));
  ASSERT_TRUE(store->WaitReady(std::chrono::seconds(5)));
  LimiterLoad load(store, FailurePolicy::kOpen, testing::DrillBuckets(3, 3, "s"));
  testing::Drill("sentinel", *setup.master_proxy(), load.load(), {true, true, true},
                 testing::EveryFault(milliseconds(400)));
}

// The proxy stands in front of one primary of three, which announces the proxy's port as its
// own (cluster-announce-port), so that the store finds it there through the slot map.
TEST(RedisFaultTest, EveryFaultBetweenTheClusterStoreAndOneNodeStaysOnItsShard) {
  testing::RedisCluster cluster(3, 0);
  const std::vector<uint16_t> primaries = cluster.Primaries();
  ASSERT_EQ(primaries.size(), 3u);
  FaultProxy proxy(primaries[0]);
  cluster.Announce(primaries[0], proxy.port());
  // Two threads on buckets of the proxied node, two on the other nodes'.
  std::vector<std::vector<DrillBucket>> buckets = testing::DrillBuckets(4, 3, "c");
  for (size_t t = 0; t < buckets.size(); ++t) {
    const bool proxied = t < 2;
    for (DrillBucket& b : buckets[t]) {
      const std::string stem = b.value;
      for (int i = 0; (cluster.PrimaryOf(KeySlot("rl:key:" + b.value)) == primaries[0]) != proxied;
           ++i) {
        b.value = stem + "_" + std::to_string(i);
      }
    }
  }
  ClusterOptions options = cluster.Options();
  options.timeout = testing::kDrillTimeout;
  auto store = std::make_shared<ClusterStore>(options);
  ASSERT_TRUE(store->WaitReady(std::chrono::seconds(10)));
  LimiterLoad load(store, FailurePolicy::kOpen, std::move(buckets));
  testing::Drill("cluster", proxy, load.load(), {true, true, false, false},
                 testing::EveryFault(milliseconds(400)));
}

}  // namespace
}  // namespace sluice
