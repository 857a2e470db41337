#include "http/heavy_hitters.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

namespace sluice::http {
namespace {

TEST(SpaceSavingTest, CountsExactlyWhileThereIsRoom) {
  SpaceSaving summary(4);
  for (const char* v : {"a", "b", "a", "c", "a", "b"}) summary.Add(v);
  EXPECT_EQ(summary.Top(), (std::vector<HeavyHitter>{{"a", 3, 0}, {"b", 2, 0}, {"c", 1, 0}}));
  EXPECT_EQ(summary.Floor(), 0u);
  EXPECT_EQ(summary.total(), 6u);
}

TEST(SpaceSavingTest, ANewValueTakesOverTheSmallestCounterAndItsCountAsError) {
  SpaceSaving summary(2);
  summary.Add("a", 5);
  summary.Add("b", 2);
  summary.Add("c");  // replaces b: count 3, of which 2 may be b's
  EXPECT_EQ(summary.Top(), (std::vector<HeavyHitter>{{"a", 5, 0}, {"c", 3, 2}}));
  EXPECT_EQ(summary.Floor(), 3u);
}

// Every count is an upper bound, and count - error a lower bound, of the true count.
TEST(SpaceSavingTest, BoundsHoldOnASkewedStream) {
  SpaceSaving summary(16);
  std::map<std::string, uint64_t> truth;
  std::mt19937 random(7);
  std::geometric_distribution<int> skewed(0.2);
  for (int i = 0; i < 20'000; ++i) {
    const std::string v = "v" + std::to_string(skewed(random));
    summary.Add(v);
    ++truth[v];
  }
  ASSERT_EQ(summary.size(), 16u);
  for (const HeavyHitter& h : summary.Top()) {
    EXPECT_GE(h.count, truth[h.value]) << h.value;
    EXPECT_LE(h.count - h.error, truth[h.value]) << h.value;
  }
  EXPECT_EQ(summary.Top().front().value, "v0");
}

TEST(SpaceSavingTest, AMillionDistinctValuesKeepItsSizeAndTheHeavyHitterFirst) {
  SpaceSaving summary(80);
  for (int i = 0; i < 1'000'000; ++i) {
    summary.Add("client-" + std::to_string(i));
    if (i % 10 == 0) summary.Add("the-abuser");  // 100,000 of 1,100,000
  }
  EXPECT_EQ(summary.size(), 80u);
  const std::vector<HeavyHitter> top = summary.Top();
  EXPECT_EQ(top.front().value, "the-abuser");
  EXPECT_GE(top.front().count, 100'000u);
  EXPECT_LE(top.front().count - top.front().error, 100'000u);
  // Anything else is bounded by total / capacity.
  EXPECT_LE(top[1].count, 1'100'000u / 80 + 1);
}

TEST(WindowedHeavyHittersTest, ForgetsWhatIsOlderThanTheWindow) {
  WindowedHeavyHitters window(8, 4, 15'000);  // 45 to 60 s
  for (int i = 0; i < 50; ++i) window.Add("yesterday", 1'000);
  for (int i = 0; i < 5; ++i) window.Add("today", 50'000);
  EXPECT_EQ(window.Top(10, 50'000).front(), (HeavyHitter{"yesterday", 50, 0}));
  // 60 s after the first slot began it has gone; today's offender is first.
  EXPECT_EQ(window.Top(10, 60'000), (std::vector<HeavyHitter>{{"today", 5, 0}}));
  EXPECT_EQ(window.Total(60'000), 5u);
  EXPECT_TRUE(window.Top(10, 200'000).empty());
}

TEST(WindowedHeavyHittersTest, MergesSlotsWithTheirBounds) {
  WindowedHeavyHitters window(2, 4, 1'000);
  window.Add("a", 0, 10);
  window.Add("b", 0, 1);
  window.Add("a", 1'000, 4);
  window.Add("c", 1'000, 3);
  window.Add("d", 1'000, 1);  // takes over c's counter: 4, of which 3 may be c's
  // Slot 0 holds a 10, b 1 (full: floor 1); slot 1 a 4, d 4 with error 3 (floor 4).
  const std::vector<HeavyHitter> top = window.Top(10, 1'500);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0], (HeavyHitter{"a", 14, 0}));
  EXPECT_EQ(top[1], (HeavyHitter{"b", 5, 4}));  // 1, and up to slot 1's floor 4 unseen
  EXPECT_EQ(top[2], (HeavyHitter{"d", 5, 4}));  // up to slot 0's floor 1 unseen, and 4 (3 unsure)
  EXPECT_EQ(window.Top(1, 1'500).size(), 1u);
}

TEST(WindowedHeavyHittersTest, AMillionDistinctRejectionsStayBounded) {
  WindowedHeavyHitters window(80, 4, 15'000);
  for (int i = 0; i < 1'000'000; ++i) {
    const int64_t now = i / 20;  // a million values over 50 s
    window.Add("k" + std::to_string(i), now);
    if (i % 20 == 0) window.Add("ak_heavy", now);
  }
  const std::vector<HeavyHitter> top = window.Top(20, 50'000);
  ASSERT_EQ(top.size(), 20u);
  EXPECT_EQ(top.front().value, "ak_heavy");
  EXPECT_GE(top.front().count, 50'000u);
  EXPECT_LE(top.front().count - top.front().error, 50'000u);
}

}  // namespace
}  // namespace sluice::http
