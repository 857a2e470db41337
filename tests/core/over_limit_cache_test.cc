#include "sluice/over_limit_cache.h"
#include "support/manual_clock.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(OverLimitCacheTest, RemembersUntilTheRetryTime) {
  auto clock = std::make_shared<testing::ManualClock>(1'000);
  OverLimitCache cache(clock, 10);
  EXPECT_EQ(cache.RetryMs("rl:key:a"), 0);
  cache.Remember("rl:key:a", 3'000);
  clock->Advance(1'000);
  EXPECT_EQ(cache.RetryMs("rl:key:a"), 2'000);
  EXPECT_EQ(cache.RetryMs("rl:key:b"), 0);
  clock->Advance(2'000);
  EXPECT_EQ(cache.RetryMs("rl:key:a"), 0);  // its time is up: the store is asked again
  EXPECT_EQ(cache.size(), 0u);
}

TEST(OverLimitCacheTest, ALaterRejectionMovesTheTime) {
  auto clock = std::make_shared<testing::ManualClock>();
  OverLimitCache cache(clock, 10);
  cache.Remember("k", 100);
  cache.Remember("k", 500);
  EXPECT_EQ(cache.RetryMs("k"), 500);
  cache.Remember("k", 0);  // nothing to remember
  EXPECT_EQ(cache.RetryMs("k"), 500);
}

TEST(OverLimitCacheTest, StaysWithinItsBound) {
  auto clock = std::make_shared<testing::ManualClock>();
  OverLimitCache cache(clock, 3);
  for (const char* key : {"a", "b", "c", "d"}) cache.Remember(key, 1'000);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.RetryMs("d"), 0);  // full: not remembered, the store decides
  clock->Advance(1'000);
  cache.Remember("e", 1'000);  // the expired ones make room
  EXPECT_EQ(cache.RetryMs("e"), 1'000);
  EXPECT_EQ(cache.size(), 1u);
}

}  // namespace
}  // namespace sluice
