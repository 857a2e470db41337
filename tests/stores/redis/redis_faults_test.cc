// Faults between the Redis stores and redis-server, injected by a proxy in front of one server,
// one cluster node, and a sentinel setup's master (support/fault_drill.h): for each fault, every
// check gets the failure policy's decision within the store's timeout plus 50 ms, no reply ever
// answers another check, the other shards of a cluster go on, and the store answers again by
// itself soon after the fault ends. The figures go to the test's output (docs/reliability.md).
#include <gtest/gtest.h>

#include <future>
#include <optional>
#include <thread>

#include "sluice/cluster_store.h"
#include "sluice/limiter.h"
#include "sluice/local_counting_store.h"
#include "sluice/redis_store.h"
#include "stores/cluster/key_slot.h"
#include "support/apply_blocking.h"
#include "support/fault_drill.h"
#include "support/redis_cluster.h"
#include "support/redis_sentinels.h"
#include "support/redis_server.h"
#include "support/wait_until.h"

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

// --- A call that a lost connection cut off ----------------------------------------------------

// Writes a call through `proxy` while it holds the bytes, then lets the call reach the server
// and ends the connection before its reply can come back (the client reads the end of the
// stream), and heals at once: the server has applied the call, the client never heard.
template <typename Send>
void CutOffAfterTheServerApplied(FaultProxy& proxy, Send send) {
  proxy.Inject(testing::Fault::kStall);
  const uint64_t before = proxy.from_clients();
  send();
  ASSERT_TRUE(testing::WaitUntil([&] { return proxy.from_clients() > before; }))
      << "the call was never written";
  proxy.Inject(testing::Fault::kHalfClose);
  proxy.Heal();
}

// The cluster store tries a call again elsewhere when its node cannot be reached; a call that
// was written and cut off may have been applied, and sending it again would charge its bucket
// twice, however soon the connection comes back.
TEST(RedisFaultTest, AClusterCallThatALostConnectionCutOffIsNotSentAgain) {
  testing::RedisCluster cluster(3, 0);
  const uint16_t primary = cluster.Primaries().front();
  FaultProxy proxy(primary);
  cluster.Announce(primary, proxy.port());
  std::string key;
  for (int i = 0; key.empty(); ++i) {
    const std::string candidate = "rl:cut:" + std::to_string(i);
    if (cluster.PrimaryOf(KeySlot(candidate)) == primary) key = candidate;
  }
  ClusterOptions options = cluster.Options();
  options.timeout = milliseconds(1000);  // time enough for the connection to come back
  ClusterStore store(options);
  ASSERT_TRUE(store.WaitReady(std::chrono::seconds(10)));
  const Limit limit{100, 1, 86'400'000};
  ASSERT_TRUE(testing::ApplyBlocking(store, {{key, limit, 0}}).ok());
  std::promise<Result<std::vector<BucketReply>>> cut;
  CutOffAfterTheServerApplied(proxy, [&] {
    store.Apply({{key, limit, 1}}, [&](auto r) { cut.set_value(std::move(r)); });
  });
  const Result<std::vector<BucketReply>> heard = cut.get_future().get();
  EXPECT_EQ(heard.status().code(), StatusCode::kDeadlineExceeded) << "its fate is unknown";
  auto now = testing::ApplyBlocking(store, {{key, limit, 0}});
  ASSERT_TRUE(now.ok()) << now.status().ToString();
  EXPECT_EQ(now->front().remaining, 99) << "charged once";
}

// A synced gateway sends its counts again when a sync fails, unless the sync may have been
// applied: a sync that a lost connection cut off was.
TEST(RedisFaultTest, SyncedCountsThatALostConnectionCutOffAreNotSentAgain) {
  testing::RedisServer server;
  FaultProxy proxy(server.port());
  RedisOptions options = server.Options();
  options.port = proxy.port();
  options.timeout = milliseconds(1000);
  auto redis = std::make_shared<RedisStore>(options);
  ASSERT_TRUE(redis->WaitReady(std::chrono::seconds(5)));
  LocalCountingStore gateway(redis, nullptr, /*background=*/false);
  BucketOp op{"rl:key:synced", {1000, 1, 86'400'000}, 1};
  op.counting.mode = Counting::kSynced;
  auto flush = [&gateway] {
    std::promise<void> flushed;
    gateway.Flush([&] { flushed.set_value(); });
    flushed.get_future().wait();
  };
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(testing::ApplyBlocking(gateway, {op}).ok());
  std::promise<void> cut;
  CutOffAfterTheServerApplied(proxy, [&] { gateway.Flush([&] { cut.set_value(); }); });
  cut.get_future().wait();
  EXPECT_EQ(gateway.Stats().sync_failures, 1u);
  ASSERT_TRUE(redis->WaitReady(std::chrono::seconds(5)));
  flush();
  EXPECT_EQ(std::stod(server.Client()->String({"HGET", "rl:key:synced", "tokens"})), 990)
      << "the 10 admitted were counted once";
}

}  // namespace
}  // namespace sluice
