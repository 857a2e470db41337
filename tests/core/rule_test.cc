#include "sluice/rule.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

Rule Valid() { return {"per-key", "key", "", {100, 100, 60'000}, 1}; }

TEST(RuleTest, AcceptsAWellFormedRule) {
  EXPECT_TRUE(Valid().Validate().ok());
  Rule header = Valid();
  header.attribute = "header:X-Client-Id";
  EXPECT_TRUE(header.Validate().ok());
}

struct BadRule {
  const char* name;
  void (*change)(Rule&);
  const char* mentions;
};

class RuleRejectsTest : public ::testing::TestWithParam<BadRule> {};

INSTANTIATE_TEST_SUITE_P(
    BadInput, RuleRejectsTest,
    ::testing::Values(
        BadRule{"ZeroCapacity", [](Rule& r) { r.limit.capacity = 0; }, "capacity"},
        BadRule{"NegativeCapacity", [](Rule& r) { r.limit.capacity = -5; }, "capacity"},
        BadRule{"HugeCapacity", [](Rule& r) { r.limit.capacity = INT64_MAX; }, "capacity"},
        BadRule{"ZeroTokens", [](Rule& r) { r.limit.tokens = 0; }, "tokens"},
        BadRule{"ZeroPeriod", [](Rule& r) { r.limit.period_ms = 0; }, "period"},
        BadRule{"NegativePeriod", [](Rule& r) { r.limit.period_ms = -1; }, "period"},
        BadRule{"HugePeriod", [](Rule& r) { r.limit.period_ms = INT64_MAX; }, "period"},
        BadRule{"NegativeCost", [](Rule& r) { r.cost = -1; }, "cost"},
        BadRule{"CostAboveCapacity", [](Rule& r) { r.cost = 101; }, "cost"},
        BadRule{"EndlessRefill",
                [](Rule& r) {
                  r.limit = {Limit::kMaxCapacity, 1, Limit::kMaxPeriodMs};
                },
                "refill"},
        BadRule{"EmptyName", [](Rule& r) { r.name = ""; }, "rule name"},
        BadRule{"NameWithSpace", [](Rule& r) { r.name = "per key"; }, "rule name"},
        BadRule{"EmptyAttribute", [](Rule& r) { r.attribute = ""; }, "attribute"},
        BadRule{"AttributeWithColon", [](Rule& r) { r.attribute = "a:b"; }, "attribute"},
        BadRule{"AttributeWithNewline", [](Rule& r) { r.attribute = "a\nb"; }, "attribute"},
        BadRule{"EmptyHeaderName", [](Rule& r) { r.attribute = "header:"; }, "header name"},
        BadRule{"BucketWithColon", [](Rule& r) { r.bucket = "ip:x"; }, "bucket"},
        BadRule{"HugeName", [](Rule& r) { r.name = std::string(10'240, 'a'); }, "rule name"},
        BadRule{"FixedWindowWithARefillRate",
                [](Rule& r) {
                  r.algorithm = Algorithm::kFixedWindow;
                  r.limit.tokens = 10;
                },
                "tokens (10) must equal capacity (100)"},
        BadRule{"FixedWindowOverrideWithARefillRate",
                [](Rule& r) {
                  r.algorithm = Algorithm::kFixedWindow;
                  r.overrides["big"] = {1000, 100, 60'000};
                },
                "override \"big\": a fixed window"}),
    [](const auto& info) { return info.param.name; });

TEST_P(RuleRejectsTest, WithAClearMessage) {
  Rule rule = Valid();
  GetParam().change(rule);
  Status status = rule.Validate();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find(GetParam().mentions), std::string::npos) << status.message();
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

Rule DurableMonthly() {
  Rule rule{"monthly", "tenant", "", {1000, 1000, LongestPeriodMs(CalendarPeriod::kMonth)}, 1};
  rule.durable = true;
  rule.algorithm = Algorithm::kFixedWindow;
  rule.calendar = CalendarPeriod::kMonth;
  return rule;
}

TEST(DurableRuleTest, ACalendarQuotaIsValid) {
  EXPECT_TRUE(DurableMonthly().Validate().ok());
  EXPECT_EQ(CalendarPeriodNamed("week"), CalendarPeriod::kWeek);
  EXPECT_EQ(CalendarPeriodNamed("1w"), CalendarPeriod::kNone);
  EXPECT_EQ(CalendarPeriodName(CalendarPeriod::kYear), "year");
  EXPECT_EQ(LongestPeriodMs(CalendarPeriod::kYear), 366LL * 24 * 3600 * 1000);
}

TEST(DurableRuleTest, WhatADurableRuleCannotBeIsRefused) {
  Rule not_durable = DurableMonthly();
  not_durable.durable = false;
  EXPECT_FALSE(not_durable.Validate().ok());  // a calendar period without durable
  Rule bucket = DurableMonthly();
  bucket.algorithm = Algorithm::kTokenBucket;
  EXPECT_FALSE(bucket.Validate().ok());
  Rule leased = DurableMonthly();
  leased.counting.mode = Counting::kLeased;
  EXPECT_FALSE(leased.Validate().ok());
  Rule waits = DurableMonthly();
  waits.wait = {1, 10};
  EXPECT_FALSE(waits.Validate().ok());
  Rule reported = DurableMonthly();
  reported.cost_from_header = "X-Tokens";
  EXPECT_FALSE(reported.Validate().ok());
  Rule wrong_period = DurableMonthly();
  wrong_period.limit.period_ms = 1000;
  EXPECT_FALSE(wrong_period.Validate().ok());
  Rule override_period = DurableMonthly();
  override_period.overrides.emplace("big", Limit{5000, 5000, 1000});
  EXPECT_FALSE(override_period.Validate().ok());
  Rule override_capacity = DurableMonthly();
  override_capacity.overrides.emplace("big", Limit{5000, 5000, override_capacity.limit.period_ms});
  EXPECT_TRUE(override_capacity.Validate().ok());
}

}  // namespace
}  // namespace sluice
