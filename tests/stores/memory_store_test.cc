#include "sluice/memory_store.h"

#include <gtest/gtest.h>

#include <future>

namespace sluice {
namespace {

const Limit kHundredPerMinute{100, 100, 60'000};

BucketReply Take(MemoryStore& store, const std::string& key, int64_t cost,
                 Limit limit = kHundredPerMinute) {
  BucketReply reply;
  store.Apply({{key, limit, cost}},
              [&](Result<std::vector<BucketReply>> r) { reply = r->front(); });
  return reply;
}

TEST(MemoryStoreTest, TimeComesFromTheInjectedClock) {
  auto clock = std::make_shared<ManualClock>(1'000'000);
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
  auto clock = std::make_shared<ManualClock>();
  MemoryStore store(clock);
  Take(store, "k", 1);
  EXPECT_EQ(store.BucketCount(), 1u);
  clock->Advance(600);  // full again: the same as no bucket
  EXPECT_EQ(Take(store, "k", 0).remaining, 100);
  EXPECT_EQ(store.BucketCount(), 0u);
}

TEST(MemoryStoreTest, HundredThousandBucketsRefillAndAreGone) {
  auto clock = std::make_shared<ManualClock>();
  MemoryStore store(clock);
  for (int i = 0; i < 100'000; ++i) Take(store, "client:" + std::to_string(i), 1);
  EXPECT_EQ(store.BucketCount(), 100'000u);
  clock->Advance(601);
  // Ordinary traffic sweeps them; nothing else runs. Each check removes a few expired buckets.
  for (int i = 0; i < 20'000; ++i) Take(store, "other:" + std::to_string(i), 0);
  EXPECT_EQ(store.BucketCount(), 0u);
}

TEST(MemoryStoreTest, ClockSteppingBackTakesNoTokens) {
  auto clock = std::make_shared<ManualClock>(10'000);
  MemoryStore store(clock);
  Take(store, "k", 50);
  clock->Advance(-5'000);
  EXPECT_EQ(Take(store, "k", 0).remaining, 50);
}

}  // namespace
}  // namespace sluice
