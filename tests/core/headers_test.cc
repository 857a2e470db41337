#include "sluice/headers.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

const std::vector<Rule> kRules = {{"per-ip", "ip", "", {1000, 1000, 60'000}, 1},
                                  {"per-key", "key", "", {100, 100, 60'000}, 1}};

RuleVerdict Verdict(size_t rule, bool allowed, int64_t remaining, int64_t retry_ms) {
  return {rule, allowed, remaining, retry_ms, allowed, false, kRules[rule].limit};
}

TEST(HeadersTest, DescribeTheTightestRuleInBothStyles) {
  Decision d = CombineVerdicts({Verdict(0, true, 950, 0), Verdict(1, true, 42, 0)});
  std::vector<Header> expected = {{"RateLimit-Policy", "\"per-key\";q=100;w=60"},
                                  {"RateLimit", "\"per-key\";r=42;t=1"},
                                  {"X-RateLimit-Limit", "100"},
                                  {"X-RateLimit-Remaining", "42"},
                                  {"X-RateLimit-Reset", "1"}};
  EXPECT_EQ(RateLimitHeaders(d, kRules, {}), expected);
}

TEST(HeadersTest, RejectedGetsRetryAfterAndTheRetryAsReset) {
  Decision d = CombineVerdicts({Verdict(0, true, 950, 0), Verdict(1, false, 0, 2400)});
  std::vector<Header> expected = {{"RateLimit", "\"per-key\";r=0;t=3"}, {"Retry-After", "3"}};
  std::vector<Header> got = RateLimitHeaders(d, kRules, {true, false});
  got.erase(got.begin());  // RateLimit-Policy, checked above
  EXPECT_EQ(got, expected);
}

TEST(HeadersTest, StylesCanBeTurnedOff) {
  Decision d = CombineVerdicts({Verdict(1, true, 99, 0)});
  EXPECT_TRUE(RateLimitHeaders(d, kRules, {false, false}).empty());
  EXPECT_EQ(RateLimitHeaders(d, kRules, {false, true}).size(), 3u);
}

TEST(HeadersTest, FullBucketResetsInZeroAndUncheckedDecisionsSayNothing) {
  Decision full = CombineVerdicts({Verdict(1, true, 100, 0)});
  EXPECT_EQ(RateLimitHeaders(full, kRules, {false, true}).back().second, "0");
  Decision unchecked;
  unchecked.checked = false;
  EXPECT_TRUE(RateLimitHeaders(unchecked, kRules, {}).empty());
  EXPECT_TRUE(RateLimitHeaders(CombineVerdicts({}), kRules, {}).empty());
}

TEST(HeadersTest, OverrideLimitIsTheOneDescribed) {
  RuleVerdict big = Verdict(1, true, 900, 0);
  big.limit = {1000, 1000, 60'000};
  Decision d = CombineVerdicts({big});
  EXPECT_EQ(RateLimitHeaders(d, kRules, {true, false}).front().second, "\"per-key\";q=1000;w=60");
}

}  // namespace
}  // namespace sluice
