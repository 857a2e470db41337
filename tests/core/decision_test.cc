#include "sluice/decision.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

// One rule's answer in a row of the design's table (docs/design.md); retry in ms when rejecting.
struct Cell {
  bool allowed;
  int64_t retry_ms = 0;
};

struct Row {
  const char* name;
  Cell ip, key, tenant;
  bool allowed;
  int64_t retry_after_s;
  std::optional<size_t> rejecting;
};

class DecisionTableTest : public ::testing::TestWithParam<Row> {};

// The design's decision table, row by row.
INSTANTIATE_TEST_SUITE_P(
    Document, DecisionTableTest,
    ::testing::Values(Row{"AllAllow", {true}, {true}, {true}, true, 0, std::nullopt},
                      Row{"KeyRejects600ms", {true}, {false, 600}, {true}, false, 1, 1},
                      Row{"IpRejects2s", {false, 2000}, {true}, {true}, false, 2, 0},
                      Row{"AllReject", {false, 2000}, {false, 600}, {false, 400}, false, 2, 0}),
    [](const auto& info) { return info.param.name; });

TEST_P(DecisionTableTest, RejectsIfAnyRejectsAndWaitsForTheLongestRetry) {
  const Row& row = GetParam();
  auto verdict = [](size_t rule, Cell c) {
    return RuleVerdict{rule, c.allowed, c.allowed ? 10 : 0, c.retry_ms, c.allowed};
  };
  Decision d = CombineVerdicts({verdict(0, row.ip), verdict(1, row.key), verdict(2, row.tenant)});
  EXPECT_EQ(d.allowed, row.allowed);
  EXPECT_EQ(d.retry_after_s, row.retry_after_s);
  EXPECT_EQ(d.rejecting, row.rejecting);
  EXPECT_TRUE(d.checked);
}

TEST(DecisionTest, TightestIsTheRuleWithFewestRemaining) {
  Decision d =
      CombineVerdicts({{0, true, 950, 0, true}, {1, true, 42, 0, true}, {2, true, 9000, 0, true}});
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.tightest, 1u);
  EXPECT_FALSE(d.rejecting);
}

TEST(DecisionTest, NoRulesAllows) {
  Decision d = CombineVerdicts({});
  EXPECT_TRUE(d.allowed);
  EXPECT_FALSE(d.tightest);
  EXPECT_EQ(d.retry_after_s, 0);
}

TEST(DecisionTest, RetryAfterRoundsUpToWholeSeconds) {
  EXPECT_EQ(RetryAfterSeconds(0), 0);
  EXPECT_EQ(RetryAfterSeconds(1), 1);
  EXPECT_EQ(RetryAfterSeconds(600), 1);
  EXPECT_EQ(RetryAfterSeconds(1000), 1);
  EXPECT_EQ(RetryAfterSeconds(1001), 2);
  EXPECT_EQ(RetryAfterSeconds(2000), 2);
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

TEST(DecisionTest, ShadowVerdictsAreCountedButDecideNothing) {
  RuleVerdict enforced{0, true, 50, 0, true, false};
  RuleVerdict shadow{1, false, 0, 3000, false, true};
  Decision d = CombineVerdicts({enforced, shadow});
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.shadow_rejections, 1u);
  EXPECT_EQ(d.tightest, 0u);  // headers describe enforced rules only
  EXPECT_FALSE(d.rejecting);
  EXPECT_EQ(d.retry_after_s, 0);
}

}  // namespace
}  // namespace sluice
