#include "sluice/memory_store.h"

#include <gtest/gtest.h>

#include <future>

#include "support/manual_clock.h"
#include "support/resident_memory.h"

namespace sluice {
namespace {

using testing::ResidentBytes;

const Limit kHundredPerMinute{100, 100, 60'000};

BucketReply Take(MemoryStore& store, const std::string& key, int64_t cost,
                 Limit limit = kHundredPerMinute) {
  BucketReply reply;
  store.Apply({{key, limit, cost}},
              [&](Result<std::vector<BucketReply>> r) { reply = r->front(); });
  return reply;
}

TEST(MemoryStoreTest, TimeComesFromTheInjectedClock) {
  auto clock = std::make_shared<testing::ManualClock>(1'000'000);
  MemoryStore store(clock);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(Take(store, "k", 1).allowed);
  BucketReply no = Take(store, "k", 1);
  EXPECT_FALSE(no.allowed);
  EXPECT_EQ(no.retry_ms, 600);
  clock->Advance(600);
  EXPECT_TRUE(Take(store, "k", 1).allowed);
  clock->Advance(599);
  EXPECT_FALSE(Take(store, "k", 1).allowed);
  clock->Advance(1);
  EXPECT_TRUE(Take(store, "k", 1).allowed);
}

TEST(MemoryStoreTest, BucketIsForgottenWhenItWouldBeFull) {
  auto clock = std::make_shared<testing::ManualClock>();
  MemoryStore store(clock);
  Take(store, "k", 1);
  EXPECT_EQ(store.BucketCount(), 1u);
  clock->Advance(600);  // full again: the same as no bucket
  EXPECT_EQ(Take(store, "k", 0).remaining, 100);
  EXPECT_EQ(store.BucketCount(), 0u);
}

TEST(MemoryStoreTest, HundredThousandBucketsRefillAndAreGone) {
  auto clock = std::make_shared<testing::ManualClock>();
  MemoryStore store(clock);
  for (int i = 0; i < 100'000; ++i) Take(store, "client:" + std::to_string(i), 1);
  EXPECT_EQ(store.BucketCount(), 100'000u);
  clock->Advance(601);
  // Ordinary traffic sweeps them; nothing else runs. Each check removes a few expired buckets.
  for (int i = 0; i < 20'000; ++i) Take(store, "other:" + std::to_string(i), 0);
  EXPECT_EQ(store.BucketCount(), 0u);
}

TEST(MemoryStoreTest, ClockSteppingBackTakesNoTokens) {
  auto clock = std::make_shared<testing::ManualClock>(10'000);
  MemoryStore store(clock);
  Take(store, "k", 50);
  clock->Advance(-5'000);
  EXPECT_EQ(Take(store, "k", 0).remaining, 50);
}

// A flood of distinct clients (an attacker rotating API keys) against a bound: the store holds
// no more than it, its memory stays flat, and a real client's bucket, far from full, is never
// the one forgotten: its count stays exact.
TEST(MemoryStoreTest, AFloodOfDistinctKeysStaysWithinTheBound) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  constexpr int64_t kKeys = 1'000'000;  // the sanitizers slow every op several times
#else
  constexpr int64_t kKeys = 10'000'000;
#endif
  constexpr size_t kBound = 100'000;
  auto clock = std::make_shared<testing::ManualClock>(0);
  MemoryStore store(clock, kBound);
  const Limit hour{100, 100, 3'600'000};
  EXPECT_TRUE(Take(store, "rl:key:real", 60, hour).allowed);
  [[maybe_unused]] size_t resident_at_bound = 0;
  for (int64_t i = 0; i < kKeys; ++i) {
    Take(store, "rl:key:flood-" + std::to_string(i), 1, hour);
    if (i == kKeys / 10) resident_at_bound = ResidentBytes();
    if (i % 1000 == 0) clock->Advance(1);
  }
  EXPECT_LE(store.BucketCount(), kBound);
  EXPECT_GE(store.Evictions(), static_cast<uint64_t>(kKeys) - kBound);
#if !defined(__SANITIZE_ADDRESS__)  // ASan's quarantine holds freed memory by design
  EXPECT_LT(static_cast<double>(ResidentBytes()), 1.05 * static_cast<double>(resident_at_bound));
#endif
  // 60 taken an hour ago at most: 40 left and a little refill, never a fresh 100.
  const BucketReply real = Take(store, "rl:key:real", 0, hour);
  EXPECT_GE(real.remaining, 40);
  EXPECT_LT(real.remaining, 50);
}

TEST(MemoryStoreTest, TheBucketNearestToFullIsTheOneForgotten) {
  auto clock = std::make_shared<testing::ManualClock>(0);
  MemoryStore store(clock, 64);  // four buckets a shard
  const Limit minute{100, 100, 60'000};
  // "drained" is 99 tokens from full, every other bucket 1: in its shard it is always the last
  // to go, so it keeps its count while hundreds of others come and go.
  Take(store, "drained", 99, minute);
  for (int i = 0; i < 500; ++i) Take(store, "other-" + std::to_string(i), 1, minute);
  EXPECT_EQ(Take(store, "drained", 0, minute).remaining, 1);
  EXPECT_LE(store.BucketCount(), 64u);
  EXPECT_GE(store.Evictions(), 500u - 64u);
  // What the command reports of any store, through the interface.
  const Store& any = store;
  EXPECT_EQ(any.BucketsForgotten(), store.Evictions());
}

}  // namespace
}  // namespace sluice
