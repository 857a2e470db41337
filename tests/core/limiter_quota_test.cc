// The limiter's durable rules, on a quota store of plain logic: asked last, all or nothing, the
// policy's refunds, the failure policy, and the spent quotas it answers without asking.
#include "sluice/limiter.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "sluice/headers.h"
#include "sluice/memory_store.h"
#include "support/fake_store.h"

namespace sluice {
namespace {

constexpr int64_t kWindowStart = 1'000'000;
constexpr int64_t kWindowEnd = 1'000'000 + 30LL * 24 * 3600 * 1000;
constexpr int64_t kNow = kWindowEnd - 90'000;  // 90 s before the window ends

Rule PerKey() { return {"per-key", "key", "", {10, 10, 60'000}, 1}; }

Rule Monthly(int64_t capacity) {
  Rule rule{
      "monthly", "tenant", "", {capacity, capacity, LongestPeriodMs(CalendarPeriod::kMonth)}, 1};
  rule.durable = true;
  rule.algorithm = Algorithm::kFixedWindow;
  rule.calendar = CalendarPeriod::kMonth;
  return rule;
}

const Request kRequest{{"key", "ak_1"}, {"tenant", "org_acme"}};

struct QuotaLimiter {
  std::shared_ptr<MemoryStore> store = std::make_shared<MemoryStore>();
  std::shared_ptr<testing::FakeQuotaStore> quotas =
      std::make_shared<testing::FakeQuotaStore>(kWindowStart, kWindowEnd, kNow);
  std::unique_ptr<Limiter> limiter;

  explicit QuotaLimiter(std::vector<Rule> rules,
                        MultiRulePolicy policy = MultiRulePolicy::kChargeAll,
                        FailurePolicy quota_failure = FailurePolicy::kClosed) {
    LimiterOptions options;
    options.policy = policy;
    options.quota_store = quotas;
    options.quota_failure = quota_failure;
    auto made = Limiter::Create(std::move(rules), options, store);
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    limiter = std::move(made).value();
  }

  // What the rate limit rule has left, by a look (cost 0) at its bucket.
  int64_t PerKeyLeft() const {
    Request look{{"key", "ak_1"}};
    look.SetCost(0);
    const Decision d = limiter->CheckBlocking(look);
    for (const RuleVerdict& v : d.verdicts) {
      if (v.rule == 0) return v.remaining;
    }
    return -1;
  }
};

TEST(LimiterQuotaTest, DurableRulesNeedAQuotaStore) {
  auto limiter = Limiter::Create({Monthly(5)}, {}, std::make_shared<MemoryStore>());
  ASSERT_FALSE(limiter.ok());
  EXPECT_NE(limiter.status().message().find("quota store"), std::string::npos);
}

TEST(LimiterQuotaTest, AQuotaIsSpentOnlyByRequestsTheOtherRulesAllow) {
  QuotaLimiter s({PerKey(), Monthly(100)});
  for (int i = 0; i < 12; ++i) s.limiter->CheckBlocking(kRequest);
  // Ten passed the rate limit and took quota; the two it rejected never reached the quota store.
  EXPECT_EQ(s.quotas->Used("tenant:org_acme"), 10);
  EXPECT_EQ(s.quotas->takes(), 10);
}

TEST(LimiterQuotaTest, AQuotaRejectionIsARejectionWithTheWindowsHeaders) {
  QuotaLimiter s({PerKey(), Monthly(2)});
  EXPECT_TRUE(s.limiter->CheckBlocking(kRequest).allowed);
  EXPECT_TRUE(s.limiter->CheckBlocking(kRequest).allowed);
  const Decision d = s.limiter->CheckBlocking(kRequest);
  EXPECT_FALSE(d.allowed);
  EXPECT_TRUE(d.checked);
  ASSERT_TRUE(d.rejecting);
  const RuleVerdict& quota = d.verdicts[*d.rejecting];
  EXPECT_EQ(quota.rule, 1U);
  EXPECT_EQ(quota.retry_ms, 90'000);
  EXPECT_EQ(quota.reset_ms, 90'000);
  EXPECT_EQ(quota.limit.period_ms, kWindowEnd - kWindowStart);
  EXPECT_EQ(d.retry_after_s, 90);
  std::map<std::string_view, std::string> headers;
  for (auto& [name, value] : RateLimitHeaders(d, s.limiter->rules(), {})) headers[name] = value;
  EXPECT_EQ(headers["RateLimit-Policy"], "\"monthly\";q=2;w=2592000");
  EXPECT_EQ(headers["RateLimit"], "\"monthly\";r=0;t=90");
  EXPECT_EQ(headers["Retry-After"], "90");
}

TEST(LimiterQuotaTest, AQuotaRejectionRefundsTheOtherRulesUnderRefund) {
  for (MultiRulePolicy policy : {MultiRulePolicy::kRefund, MultiRulePolicy::kAllOrNothing}) {
    QuotaLimiter s({PerKey(), Monthly(1)}, policy);
    EXPECT_TRUE(s.limiter->CheckBlocking(kRequest).allowed);
    EXPECT_EQ(s.PerKeyLeft(), 9);
    const Decision d = s.limiter->CheckBlocking(kRequest);
    EXPECT_FALSE(d.allowed);
    EXPECT_FALSE(d.verdicts[0].charged);
    EXPECT_EQ(s.PerKeyLeft(), 9);  // given back
  }
  QuotaLimiter charged({PerKey(), Monthly(1)}, MultiRulePolicy::kChargeAll);
  charged.limiter->CheckBlocking(kRequest);
  const Decision d = charged.limiter->CheckBlocking(kRequest);
  EXPECT_FALSE(d.allowed);
  EXPECT_TRUE(d.verdicts[0].charged);
  EXPECT_EQ(charged.PerKeyLeft(), 8);  // kept, as charge-all keeps a rejected request's tokens
}

TEST(LimiterQuotaTest, TheQuotaStoresFailurePolicyDecidesWhenItFails) {
  QuotaLimiter closed({PerKey(), Monthly(5)}, MultiRulePolicy::kRefund);
  closed.quotas->FailWith(Status::DeadlineExceeded("no answer"));
  Decision d = closed.limiter->CheckBlocking(kRequest);
  EXPECT_FALSE(d.allowed);
  EXPECT_FALSE(d.checked);
  EXPECT_TRUE(d.quota_failed);
  EXPECT_EQ(d.error.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(closed.PerKeyLeft(), 10);  // refunded: the request did not pass
  EXPECT_EQ(closed.limiter->Stats().quota_errors, 1U);

  QuotaLimiter open({PerKey(), Monthly(5)}, MultiRulePolicy::kRefund, FailurePolicy::kOpen);
  open.quotas->FailWith(Status::Unavailable("down"));
  d = open.limiter->CheckBlocking(kRequest);
  EXPECT_TRUE(d.allowed);
  EXPECT_FALSE(d.checked);
  EXPECT_TRUE(d.quota_failed);
}

TEST(LimiterQuotaTest, ASpentQuotaIsRejectedWithoutAskingAnyStore) {
  QuotaLimiter s({PerKey(), Monthly(5)});
  s.quotas->MarkSpent("tenant:org_acme");  // the rule's bucket family: its attribute
  const Decision d = s.limiter->CheckBlocking(kRequest);
  EXPECT_FALSE(d.allowed);
  EXPECT_TRUE(d.from_cache);
  EXPECT_EQ(s.quotas->takes(), 0);
  EXPECT_EQ(s.PerKeyLeft(), 10);  // the rate limit was not charged either
  EXPECT_EQ(s.limiter->Stats().quota_cache_rejections, 1U);
}

TEST(LimiterQuotaTest, ARequestOfDurableRulesAloneAsksOnlyTheQuotaStore) {
  QuotaLimiter s({Monthly(1)});
  EXPECT_TRUE(s.limiter->CheckBlocking(kRequest).allowed);
  EXPECT_FALSE(s.limiter->CheckBlocking(kRequest).allowed);
  EXPECT_EQ(s.limiter->Stats().allowed, 1U);
  EXPECT_EQ(s.limiter->Stats().rejected, 1U);
}

TEST(LimiterQuotaTest, AValueTooLongForAKeyIsRefused) {
  QuotaLimiter s({Monthly(1)});
  const Decision d = s.limiter->CheckBlocking({{"tenant", std::string(1025, 'x')}});
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.error.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.quotas->takes(), 0);
}

}  // namespace
}  // namespace sluice
