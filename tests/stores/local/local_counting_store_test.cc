// Synced and leased counting over an in-process shared store, with a manual clock that both the
// gateways and the shared store read: time moves only when a test moves it, so no token comes
// back unless asked for. Every "gateway" is a LocalCountingStore of its own on one MemoryStore.
#include "sluice/local_counting_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "sluice/limiter.h"
#include "sluice/memory_store.h"
#include "support/apply_blocking.h"
#include "support/fake_store.h"
#include "support/manual_clock.h"

namespace sluice {
namespace {

using testing::ApplyBlocking;

class LocalCountingTest : public ::testing::Test {
 protected:
  std::unique_ptr<LocalCountingStore> Gateway(
      size_t max_buckets = LocalCountingStore::kDefaultMaxBuckets) {
    return std::make_unique<LocalCountingStore>(shared_, clock_, /*background=*/false, max_buckets);
  }

  static Rule PerKey(Counting mode, Limit limit) {
    Rule rule{"per-key", "key", "", limit, 1};
    rule.counting.mode = mode;
    return rule;
  }

  static std::unique_ptr<Limiter> LimiterOn(std::shared_ptr<Store> store, const Rule& rule) {
    auto limiter = Limiter::Create({rule}, {}, std::move(store));
    EXPECT_TRUE(limiter.ok()) << limiter.status().ToString();
    return std::move(limiter).value();
  }

  // The shared bucket's tokens, looked at with a cost of 0.
  int64_t SharedRemaining(const Limit& limit, const std::string& key = "rl:key:k") {
    auto replies = ApplyBlocking(*shared_, {{key, limit, 0}});
    EXPECT_TRUE(replies.ok());
    return replies.ok() ? replies->front().remaining : -1;
  }

  std::shared_ptr<testing::ManualClock> clock_ = std::make_shared<testing::ManualClock>(1'000'000);
  std::shared_ptr<MemoryStore> shared_ = std::make_shared<MemoryStore>(clock_);
  const Request request_{{"key", "k"}};
};

const Limit kTenPerDay{10, 10, 86'400'000};
const Limit kHundredPerDay{100, 100, 86'400'000};

TEST_F(LocalCountingTest, ARuleThatCountsLocallyNeedsALocalCountingStore) {
  auto limiter = Limiter::Create({PerKey(Counting::kSynced, kTenPerDay)}, {}, shared_);
  EXPECT_EQ(limiter.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(LocalCountingTest, SyncedDecidesLocallyBetweenSyncs) {
  std::shared_ptr<LocalCountingStore> gateway = Gateway();
  auto limiter = LimiterOn(gateway, PerKey(Counting::kSynced, kTenPerDay));
  ASSERT_TRUE(limiter->CheckBlocking(request_).allowed);
  EXPECT_EQ(gateway->Stats().store_calls, 0u);
  gateway->Tick();  // a bucket first seen is synced at once
  EXPECT_EQ(gateway->Stats().sync_calls, 1u);
  EXPECT_EQ(SharedRemaining(kTenPerDay), 9);

  for (int i = 0; i < 3; ++i) ASSERT_TRUE(limiter->CheckBlocking(request_).allowed);
  gateway->Tick();  // the next sync is on the next interval boundary
  EXPECT_EQ(gateway->Stats().sync_calls, 1u);
  EXPECT_EQ(SharedRemaining(kTenPerDay), 9);
  clock_->Advance(1000);
  gateway->Tick();
  EXPECT_EQ(gateway->Stats().sync_calls, 2u);
  EXPECT_EQ(SharedRemaining(kTenPerDay), 6);
  EXPECT_EQ(limiter->CheckBlocking(request_).verdicts[0].remaining, 5);
}

// A flush while a bucket's sync is out sends what was admitted since too, without waiting for
// that sync: at a gateway's stop nothing comes after the flush.
TEST_F(LocalCountingTest, AFlushSendsWhatASyncStillOutLeftBehind) {
  // A shared store that takes calls at once and carries them out when told: a sync that is
  // still out when something else happens.
  auto held = std::make_shared<testing::FakeStore>(shared_);
  held->Hold(true);
  auto gateway = std::make_shared<LocalCountingStore>(held, clock_, /*background=*/false);
  auto limiter = LimiterOn(gateway, PerKey(Counting::kSynced, kTenPerDay));
  ASSERT_TRUE(limiter->CheckBlocking(request_).allowed);
  gateway->Tick();  // the first sync, held
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(limiter->CheckBlocking(request_).allowed);
  bool flushed = false;
  gateway->Flush([&] { flushed = true; });
  held->Release();
  EXPECT_TRUE(flushed);
  EXPECT_EQ(SharedRemaining(kTenPerDay), 6) << "all 4 admitted reached the shared store";
}

// Other gateways' counts arrive with each sync; a bucket that is not full again is never
// forgotten, so pausing does not make it look full.
TEST_F(LocalCountingTest, SyncedLearnsOtherGatewaysCountsAndRemembersAnEmptyBucket) {
  std::shared_ptr<LocalCountingStore> gateway = Gateway();
  auto limiter = LimiterOn(gateway, PerKey(Counting::kSynced, kTenPerDay));
  ASSERT_TRUE(limiter->CheckBlocking(request_).allowed);
  gateway->Tick();
  ASSERT_TRUE(ApplyBlocking(*shared_, {{"rl:key:k", kTenPerDay, 6}}).ok());  // another gateway
  for (int i = 0; i < 9; ++i) limiter->CheckBlocking(request_);
  clock_->Advance(1000);
  gateway->Tick();
  EXPECT_EQ(SharedRemaining(kTenPerDay), 0);
  for (int pause = 0; pause < 3; ++pause) {
    clock_->Advance(2500);
    gateway->Tick();
    EXPECT_FALSE(limiter->CheckBlocking(request_).allowed);
  }
}

// A refund on top of a lease can leave more held than a bucket holds; giving it back gives at
// most the capacity, and other buckets' syncs in the same tick are unharmed.
TEST_F(LocalCountingTest, AReturnNeverExceedsTheCapacity) {
  std::shared_ptr<LocalCountingStore> gateway = Gateway();
  BucketOp leased{"rl:key:k", kTenPerDay, 10};
  leased.counting = {Counting::kLeased, 1000, 1.0, 1000};
  ASSERT_TRUE(ApplyBlocking(*gateway, {leased}).ok());  // a lease of 10, all spent
  for (int64_t refund : {-10, -5}) {                    // then 15 given back to the gateway
    leased.cost = refund;
    ASSERT_TRUE(ApplyBlocking(*gateway, {leased}).ok());
  }
  BucketOp synced{"rl:key:other", kTenPerDay, 2};
  synced.counting.mode = Counting::kSynced;
  ASSERT_TRUE(ApplyBlocking(*gateway, {synced}).ok());
  gateway->Flush();
  EXPECT_EQ(gateway->Stats().tokens_returned, 10u);
  EXPECT_EQ(gateway->Stats().sync_failures, 0u);
  EXPECT_EQ(SharedRemaining(kTenPerDay), 10);
  EXPECT_EQ(SharedRemaining(kTenPerDay, "rl:key:other"), 8);
}

// Three gateways that each know nothing yet admit the whole limit each (the documented bound);
// once each has synced, the bucket is empty for all of them.
TEST_F(LocalCountingTest, SyncedGatewaysOvershootAtMostGatewaysTimesTheLimitBetweenSyncs) {
  std::vector<std::shared_ptr<LocalCountingStore>> gateways;
  std::vector<std::unique_ptr<Limiter>> limiters;
  for (int g = 0; g < 3; ++g) {
    gateways.push_back(Gateway());
    limiters.push_back(LimiterOn(gateways.back(), PerKey(Counting::kSynced, kTenPerDay)));
  }
  int admitted = 0;
  for (int round = 0; round < 15; ++round) {
    for (auto& limiter : limiters) admitted += limiter->CheckBlocking(request_).allowed ? 1 : 0;
  }
  EXPECT_EQ(admitted, 30);  // 3 gateways x 10, against a bucket of 10
  clock_->Advance(1000);
  for (auto& gateway : gateways) gateway->Tick();
  EXPECT_EQ(SharedRemaining(kTenPerDay), 0);
  for (auto& limiter : limiters) EXPECT_FALSE(limiter->CheckBlocking(request_).allowed);
}

TEST_F(LocalCountingTest, SyncedRefundsGoBackWithTheNextSync) {
  std::shared_ptr<LocalCountingStore> gateway = Gateway();
  ASSERT_TRUE(ApplyBlocking(*shared_, {{"rl:key:k", kTenPerDay, 5}}).ok());
  BucketOp op{"rl:key:k", kTenPerDay, 3};
  op.counting.mode = Counting::kSynced;
  ASSERT_TRUE(ApplyBlocking(*gateway, {op}).ok());
  op.cost = -3;
  ASSERT_TRUE(ApplyBlocking(*gateway, {op}).ok());
  op.cost = -2;
  ASSERT_TRUE(ApplyBlocking(*gateway, {op}).ok());
  clock_->Advance(1000);
  gateway->Tick();
  EXPECT_EQ(SharedRemaining(kTenPerDay), 7);
}

// Twelve threads over three gateways: every token admitted came out of the shared bucket, and
// every token leased and not spent goes back.
TEST_F(LocalCountingTest, LeasedGatewaysNeverAdmitMoreThanTheSharedBucket) {
  std::atomic<int> admitted{0};
  {
    std::vector<std::shared_ptr<LocalCountingStore>> gateways;
    std::vector<std::unique_ptr<Limiter>> limiters;
    for (int g = 0; g < 3; ++g) {
      gateways.push_back(Gateway());
      limiters.push_back(LimiterOn(gateways.back(), PerKey(Counting::kLeased, kHundredPerDay)));
    }
    std::vector<std::thread> threads;
    threads.reserve(12);
    for (int t = 0; t < 12; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 20; ++i) {
          admitted += limiters[static_cast<size_t>(t % 3)]->CheckBlocking(request_).allowed;
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_LE(admitted.load(), 100);
  }  // the gateways give back what they hold
  EXPECT_EQ(admitted.load() + SharedRemaining(kHundredPerDay), 100);
}

TEST_F(LocalCountingTest, LeasesGrowOnAHotKeyToATenthOfACallPerRequestAtMost) {
  const Limit big{10'000, 10'000, 86'400'000};
  std::shared_ptr<LocalCountingStore> gateway = Gateway();
  auto limiter = LimiterOn(gateway, PerKey(Counting::kLeased, big));
  for (int i = 0; i < 5000; ++i) {
    ASSERT_TRUE(limiter->CheckBlocking(request_).allowed);
    if (i % 50 == 0) clock_->Advance(1);  // 50 requests a millisecond
  }
  const LocalCountingStats stats = gateway->Stats();
  const double calls_per_admitted = static_cast<double>(stats.store_calls) / 5000;
  std::cout << "leased, one hot key: " << stats.store_calls << " store calls for 5000 admitted ("
            << calls_per_admitted << " a request), " << stats.tokens_leased << " tokens leased\n";
  EXPECT_LE(calls_per_admitted, 0.1);
  EXPECT_LE(stats.tokens_leased, 5000u + 1000u);  // never more than a tenth of capacity ahead
}

TEST_F(LocalCountingTest, AnIdleKeyLeasesOneTokenAndGivesBackWhatItDidNotSpend) {
  std::shared_ptr<LocalCountingStore> gateway = Gateway();
  auto limiter = LimiterOn(gateway, PerKey(Counting::kLeased, kHundredPerDay));
  ASSERT_TRUE(limiter->CheckBlocking(request_).allowed);
  EXPECT_EQ(gateway->Stats().tokens_leased, 1u);
  clock_->Advance(10'000);
  ASSERT_TRUE(limiter->CheckBlocking(request_).allowed);
  EXPECT_EQ(gateway->Stats().tokens_leased, 2u);  // one request in 10 s: one token a lease

  for (int i = 0; i < 5; ++i) ASSERT_TRUE(limiter->CheckBlocking(request_).allowed);  // busier
  const int64_t held = 100 - 7 - SharedRemaining(kHundredPerDay);
  ASSERT_GT(held, 0);
  clock_->Advance(999);
  gateway->Tick();
  EXPECT_EQ(gateway->Stats().tokens_returned, 0u);  // expiries fall on 50 ms steps after the ttl
  clock_->Advance(51);
  gateway->Tick();
  EXPECT_EQ(gateway->Stats().tokens_returned, static_cast<uint64_t>(held));
  EXPECT_EQ(SharedRemaining(kHundredPerDay), 93);
}

// Two gateways with equal demand take turns until the bucket is empty: neither starves.
TEST_F(LocalCountingTest, TwoGatewaysWithEqualDemandShareABucketEvenly) {
  const Limit thousand{1000, 1000, 86'400'000};
  std::shared_ptr<LocalCountingStore> a = Gateway();
  std::shared_ptr<LocalCountingStore> b = Gateway();
  auto on_a = LimiterOn(a, PerKey(Counting::kLeased, thousand));
  auto on_b = LimiterOn(b, PerKey(Counting::kLeased, thousand));
  int from_a = 0;
  int from_b = 0;
  for (int i = 0; i < 1500; ++i) {
    from_a += on_a->CheckBlocking(request_).allowed ? 1 : 0;
    from_b += on_b->CheckBlocking(request_).allowed ? 1 : 0;
    if (i % 10 == 0) clock_->Advance(1);
  }
  std::cout << "two gateways, equal demand: " << from_a << " and " << from_b << " of 1000\n";
  EXPECT_EQ(from_a + from_b, 1000);
  EXPECT_GE(std::min(from_a, from_b), 450);
}

TEST_F(LocalCountingTest, AllOrNothingFallsBackToRefundWithLocalRules) {
  std::shared_ptr<LocalCountingStore> gateway = Gateway();
  Rule local = PerKey(Counting::kSynced, kTenPerDay);
  Rule shared{"per-ip", "ip", "", {1, 1, 86'400'000}, 1};
  LimiterOptions options;
  options.policy = MultiRulePolicy::kAllOrNothing;
  auto limiter = Limiter::Create({local, shared}, options, gateway);
  ASSERT_TRUE(limiter.ok());
  const Request request{{"key", "k"}, {"ip", "i"}};
  ASSERT_TRUE((*limiter)->CheckBlocking(request).allowed);
  Decision second = (*limiter)->CheckBlocking(request);
  EXPECT_FALSE(second.allowed);
  EXPECT_TRUE(second.fell_back_to_refund);
  EXPECT_EQ(second.verdicts[0].remaining, 8);  // taken, then given back locally
  clock_->Advance(1000);
  gateway->Tick();
  EXPECT_EQ(SharedRemaining(kTenPerDay), 9);
}

// --- The bound on buckets held -----------------------------------------------------------

// A flood of distinct keys against a bound of 4: a bucket that owes the store nothing and is far
// from full (a real client's, synced) is never the one forgotten, and its count stays exact.
TEST_F(LocalCountingTest, AtTheBoundTheSettledBucketNearestToFullIsForgotten) {
  std::shared_ptr<LocalCountingStore> gateway = Gateway(4);
  auto limiter = LimiterOn(gateway, PerKey(Counting::kSynced, kHundredPerDay));
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(limiter->CheckBlocking(request_).allowed);
  gateway->Tick();  // synced: it owes nothing now, 40 left
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(limiter->CheckBlocking({{"key", "flood-" + std::to_string(i)}}).allowed);
    if (i % 2 == 1) {  // the flood's buckets sync too, and are then free to go
      clock_->Advance(1000);
      gateway->Tick();
    }
  }
  EXPECT_GE(gateway->Stats().evictions, 200u - 4u);
  EXPECT_EQ(gateway->Stats().refusals, 0u);
  EXPECT_EQ(limiter->CheckBlocking(request_).verdicts[0].remaining, 39);
  clock_->Advance(1000);
  gateway->Tick();
  EXPECT_EQ(SharedRemaining(kHundredPerDay), 39);
}

// The store is down (its calls held unanswered) while distinct keys come: the buckets hold
// counts it has not taken, so none is forgotten; past the bound a new bucket gets the failure
// policy, and the buckets held go on being decided locally. Once the store answers, every count
// reaches it and new buckets are taken again.
TEST_F(LocalCountingTest, AtTheBoundCountsOwedAreNeverForgottenAndNewBucketsGetTheFailurePolicy) {
  // A shared store that takes calls at once and carries them out when told: a sync that is
  // still out when something else happens.
  auto held = std::make_shared<testing::FakeStore>(shared_);
  held->Hold(true);
  auto gateway = std::make_shared<LocalCountingStore>(held, clock_, /*background=*/false, 4);
  LimiterOptions closed;
  closed.failure = FailurePolicy::kClosed;
  auto limiter = Limiter::Create({PerKey(Counting::kSynced, kHundredPerDay)}, closed, gateway);
  ASSERT_TRUE(limiter.ok());
  auto check = [&](const std::string& key) { return (*limiter)->CheckBlocking({{"key", key}}); };
  for (int k = 0; k < 4; ++k) ASSERT_TRUE(check("owed-" + std::to_string(k)).allowed);
  gateway->Tick();  // their syncs, held: still owed
  for (int i = 0; i < 50; ++i) {
    const Decision d = check("new-" + std::to_string(i));
    EXPECT_FALSE(d.allowed);
    EXPECT_FALSE(d.checked);
    EXPECT_EQ(d.error.code(), StatusCode::kResourceExhausted);
  }
  EXPECT_EQ(gateway->Stats().refusals, 50u);
  EXPECT_EQ(gateway->Stats().evictions, 0u);
  for (int i = 0; i < 9; ++i) ASSERT_TRUE(check("owed-0").allowed);  // decided locally still

  held->Release();  // the store is back: the first syncs are answered
  clock_->Advance(1000);
  gateway->Tick();
  held->Release();
  EXPECT_EQ(SharedRemaining(kHundredPerDay, "rl:key:owed-0"), 90);
  EXPECT_EQ(SharedRemaining(kHundredPerDay, "rl:key:owed-3"), 99);
  EXPECT_TRUE(check("new-0").checked);
  EXPECT_EQ(gateway->Stats().evictions, 1u);

  // The gateway sends what it owes as it goes; a store answers every call, so the held store
  // answers those too (their callbacks hold the gateway's state, which holds the held store).
  limiter->reset();
  gateway.reset();
  held->Release();
}

// Leased tokens held are not owed counts, but the store counts them as spent: a bucket holding
// some is kept until they go back.
TEST_F(LocalCountingTest, AtTheBoundABucketHoldingLeasedTokensIsKept) {
  std::shared_ptr<LocalCountingStore> gateway = Gateway(1);
  BucketOp leased{"rl:key:k", kHundredPerDay, 10};
  leased.counting = {Counting::kLeased, 1000, 0.5, 1000};
  ASSERT_TRUE(ApplyBlocking(*gateway, {leased}).ok());  // a lease of 10, all spent
  leased.cost = -5;
  ASSERT_TRUE(ApplyBlocking(*gateway, {leased}).ok());  // 5 given back: held until it expires
  BucketOp other = leased;
  other.cost = 1;
  other.key = "rl:key:other";
  EXPECT_EQ(ApplyBlocking(*gateway, {other}).status().code(), StatusCode::kResourceExhausted);
  clock_->Advance(1100);
  gateway->Tick();  // the lease expired: its tokens went back, and the bucket may go
  EXPECT_TRUE(ApplyBlocking(*gateway, {other}).ok());
  EXPECT_EQ(gateway->Stats().evictions, 1u);
  EXPECT_EQ(SharedRemaining(kHundredPerDay), 95);
}

}  // namespace
}  // namespace sluice
