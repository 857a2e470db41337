// What envoyproxy/ratelimit's own tests expect of a rate limit service, asked of Sluice's: its
// test configuration files (their content, as facts: test/config/basic_config.yaml,
// wildcard.yaml, share_threshold.yaml, shadowmode_config.yaml, unit_multiplier.yaml and the
// refused ones) through the whole service, on the memory store with a clock the test moves.
// Where Sluice differs on purpose (a token bucket refills smoothly), docs/rls.md says so.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rls/descriptor_files.h"
#include "rls/rate_limit_requests.h"
#include "rls/service.h"
#include "sluice/clock.h"
#include "sluice/memory_store.h"
#include "support/manual_clock.h"

namespace sluice::rls {
namespace {

using Code = RateLimitResponse::Code;
constexpr Code kOk = RateLimitResponse::OK;
constexpr Code kOver = RateLimitResponse::OVER_LIMIT;
using RlsUnit = RateLimitResponse::RateLimit::Unit;

const char* const kBasicConfig = R"(
domain: test-domain
descriptors:
  - key: key1
    value: value1
    descriptors:
      - key: subkey1
        rate_limit: {unit: second, requests_per_unit: 5}
      - key: subkey1
        value: subvalue1
        rate_limit: {unit: second, requests_per_unit: 10}
  - key: key2
    rate_limit: {unit: minute, requests_per_unit: 20}
  - key: key2
    value: value2
    rate_limit: {unit: minute, requests_per_unit: 30}
  - key: key2
    value: value3
  - key: key3
    rate_limit: {unit: hour, requests_per_unit: 1}
  - key: key4
    rate_limit: {unit: day, requests_per_unit: 1}
  - key: key5
    value: value5
    rate_limit: {unit: day, requests_per_unit: 15}
    descriptors:
      - key: subkey5
        value: subvalue5
        rate_limit: {unit: day, requests_per_unit: 25}
)";

const char* const kWildcardConfig = R"(
domain: wildcard
descriptors:
  - key: wild
    value: foo*
    rate_limit: {unit: minute, requests_per_unit: 20}
  - key: noWild
    value: foo
    rate_limit: {unit: minute, requests_per_unit: 20}
  - key: noVal
    rate_limit: {unit: minute, requests_per_unit: 20}
  - key: midWild
    value: bar*b
    rate_limit: {unit: minute, requests_per_unit: 20}
  - key: multiWild
    value: foo*bar*baz
    rate_limit: {unit: minute, requests_per_unit: 20}
)";

const char* const kShareThresholdConfig = R"(
domain: share
descriptors:
  - key: files
    value: files/*
    share_threshold: true
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: file
    value: test1
    rate_limit: {unit: minute, requests_per_unit: 50}
  - key: file
    value: test*
    share_threshold: true
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: midpath
    value: /api*v1
    share_threshold: true
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: multiroute
    value: svc*ep*rpc
    share_threshold: true
    rate_limit: {unit: minute, requests_per_unit: 50}
  - key: tenant
    value: t*prod
    share_threshold: true
    descriptors:
      - key: resource
        value: res*v2
        share_threshold: true
        rate_limit: {unit: minute, requests_per_unit: 60}
  - key: path
    value: path/*
    share_threshold: true
    descriptors:
      - key: file
        value: file/*
        share_threshold: false
        descriptors:
          - key: type
            rate_limit: {unit: minute, requests_per_unit: 120}
)";

const char* const kFeaturesConfig = R"(
domain: features
descriptors:
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: open
    rate_limit: {unlimited: true}
  - key: client
    rate_limit: {unit: minute, requests_per_unit: 10, name: per-client}
  - key: client
    value: vip
    rate_limit: {unit: minute, requests_per_unit: 100, name: vip, replaces: [{name: per-client}]}
  - key: window
    rate_limit: {unit: second, requests_per_unit: 3, unit_multiplier: 30}
  - key: daily
    rate_limit: {unit: day, requests_per_unit: 20}
  - key: hourly
    rate_limit: {unit: hour, requests_per_unit: 1}
)";

// The service on a memory store whose clock the test moves.
class EnvoyExpectationsTest : public ::testing::Test {
 protected:
  EnvoyExpectationsTest() { Configure({}); }

  void Configure(ServiceOptions options) {
    options.response_headers = config::RlsHeaderNames{};
    service_ = std::make_unique<Service>(
        std::vector<std::shared_ptr<Store>>{store_},
        MatcherOf({kBasicConfig, kWildcardConfig, kShareThresholdConfig, kFeaturesConfig}),
        std::move(options));
  }

  RateLimitResponse Call(const RateLimitRequest& request) {
    std::optional<Result<RateLimitResponse>> answer;
    service_->ShouldRateLimit(request, [&](Result<RateLimitResponse> r) { answer = std::move(r); });
    EXPECT_TRUE(answer.has_value() && answer->ok());
    return answer && answer->ok() ? **answer : RateLimitResponse{};
  }

  // A call; `hits`, when given, is every descriptor's hits_addend (0: a look), else each hits 1.
  RateLimitResponse Call(const std::string& domain, const std::vector<DescriptorEntries>& entries,
                         std::optional<uint64_t> hits = std::nullopt) {
    RateLimitRequest request = RequestOf(domain, entries);
    for (auto& descriptor : *request.mutable_descriptors()) {
      if (hits) descriptor.mutable_hits_addend()->set_value(*hits);
    }
    return Call(request);
  }

  // The status of a call with `entries` alone.
  RateLimitResponse::DescriptorStatus One(const std::string& domain,
                                          const DescriptorEntries& entries,
                                          std::optional<uint64_t> hits = std::nullopt) {
    return Call(domain, {entries}, hits).statuses(0);
  }

  static std::string Header(const RateLimitResponse& response, const std::string& name) {
    for (const auto& header : response.response_headers_to_add()) {
      if (header.key() == name) return header.value();
    }
    return "";
  }

  std::shared_ptr<testing::ManualClock> clock_ =
      std::make_shared<testing::ManualClock>(1'764'633'600'000);
  std::shared_ptr<MemoryStore> store_ = std::make_shared<MemoryStore>(clock_);
  std::unique_ptr<Service> service_;
};

void ExpectLimit(const RateLimitResponse::DescriptorStatus& status, uint32_t requests,
                 RlsUnit unit) {
  ASSERT_TRUE(status.has_current_limit());
  EXPECT_EQ(status.current_limit().requests_per_unit(), requests);
  EXPECT_EQ(status.current_limit().unit(), unit);
}

void ExpectNoLimit(const RateLimitResponse::DescriptorStatus& status) {
  EXPECT_EQ(status.code(), kOk);
  EXPECT_FALSE(status.has_current_limit());
}

TEST_F(EnvoyExpectationsTest, MatchingAtEveryDepth) {
  const std::string d = "test-domain";
  ExpectNoLimit(One(d, {{"key1", "value1"}}));  // a level without a limit of its own
  ExpectLimit(One(d, {{"key1", "value1"}, {"subkey1", "something"}}), 5,
              RateLimitResponse::RateLimit::SECOND);
  ExpectLimit(One(d, {{"key1", "value1"}, {"subkey1", "subvalue1"}}), 10,
              RateLimitResponse::RateLimit::SECOND);
  ExpectNoLimit(One(d, {{"key1", "value2"}, {"subkey1", "subvalue1"}}));
  ExpectLimit(One(d, {{"key2", "something"}}), 20, RateLimitResponse::RateLimit::MINUTE);
  ExpectLimit(One(d, {{"key2", "value2"}}), 30, RateLimitResponse::RateLimit::MINUTE);
  ExpectNoLimit(One(d, {{"key2", "value3"}}));  // whitelisted: no going back to key2's default
  ExpectNoLimit(One(d, {{"key2", "value2"}, {"subkey", "x"}}));  // more entries than the tree
  ExpectLimit(One(d, {{"key3", "foo"}}), 1, RateLimitResponse::RateLimit::HOUR);
  ExpectLimit(One(d, {{"key4", "foo"}}), 1, RateLimitResponse::RateLimit::DAY);
  ExpectLimit(One(d, {{"key5", "value5"}}), 15, RateLimitResponse::RateLimit::DAY);
  ExpectLimit(One(d, {{"key5", "value5"}, {"subkey5", "subvalue5"}}), 25,
              RateLimitResponse::RateLimit::DAY);
  ExpectNoLimit(One(d, {{"key5", "value5"}, {"subkey5", "other"}}));
}

TEST_F(EnvoyExpectationsTest, TrailingMiddleAndMultipleWildcards) {
  const std::string d = "wildcard";
  ExpectLimit(One(d, {{"wild", "foo"}}), 20, RateLimitResponse::RateLimit::MINUTE);
  ExpectLimit(One(d, {{"wild", "foobar"}}), 20, RateLimitResponse::RateLimit::MINUTE);
  ExpectNoLimit(One(d, {{"wild", "fo"}}));
  ExpectNoLimit(One(d, {{"noWild", "foobar"}}));
  ExpectLimit(One(d, {{"noVal", "anything"}}), 20, RateLimitResponse::RateLimit::MINUTE);
  ExpectLimit(One(d, {{"midWild", "barab"}}), 20, RateLimitResponse::RateLimit::MINUTE);
  ExpectLimit(One(d, {{"midWild", "barb"}}), 20, RateLimitResponse::RateLimit::MINUTE);
  ExpectNoLimit(One(d, {{"midWild", "bara"}}));
  ExpectLimit(One(d, {{"multiWild", "foo123bar456baz"}}), 20, RateLimitResponse::RateLimit::MINUTE);
  ExpectLimit(One(d, {{"multiWild", "foobarbaz"}}), 20, RateLimitResponse::RateLimit::MINUTE);
  ExpectNoLimit(One(d, {{"multiWild", "foo123baz"}}));
  // Without share_threshold each matching value counts on its own.
  for (int i = 0; i < 20; ++i) One(d, {{"wild", "foo1"}});
  EXPECT_EQ(One(d, {{"wild", "foo1"}}).code(), kOver);
  EXPECT_EQ(One(d, {{"wild", "foo2"}}).code(), kOk);
}

TEST_F(EnvoyExpectationsTest, ShareThresholdCountsEveryMatchingValueInOneBucket) {
  const std::string d = "share";
  EXPECT_EQ(One(d, {{"files", "files/a.txt"}}).limit_remaining(), 99U);
  EXPECT_EQ(One(d, {{"files", "files/b.txt"}}).limit_remaining(), 98U);
  EXPECT_EQ(One(d, {{"midpath", "/api/v1"}}).limit_remaining(), 99U);
  EXPECT_EQ(One(d, {{"midpath", "/api-beta-v1"}}).limit_remaining(), 98U);
  EXPECT_EQ(One(d, {{"multiroute", "svc1ep2rpc"}}).limit_remaining(), 49U);
  EXPECT_EQ(One(d, {{"multiroute", "svcXepYrpc"}}).limit_remaining(), 48U);
  // An explicit value takes precedence over a wildcard, and counts apart.
  ExpectLimit(One(d, {{"file", "test1"}}), 50, RateLimitResponse::RateLimit::MINUTE);
  EXPECT_EQ(One(d, {{"file", "test2"}}).limit_remaining(), 99U);
  EXPECT_EQ(One(d, {{"file", "test3"}}).limit_remaining(), 98U);
  // Nested, both levels shared.
  EXPECT_EQ(One(d, {{"tenant", "t1prod"}, {"resource", "res1v2"}}).limit_remaining(), 59U);
  EXPECT_EQ(One(d, {{"tenant", "t2prod"}, {"resource", "resXv2"}}).limit_remaining(), 58U);
  // A level without share_threshold counts each of its values apart.
  EXPECT_EQ(One(d, {{"path", "path/a"}, {"file", "file/x"}, {"type", "t"}}).limit_remaining(),
            119U);
  EXPECT_EQ(One(d, {{"path", "path/b"}, {"file", "file/x"}, {"type", "t"}}).limit_remaining(),
            118U);
  EXPECT_EQ(One(d, {{"path", "path/b"}, {"file", "file/y"}, {"type", "t"}}).limit_remaining(),
            119U);
}

TEST_F(EnvoyExpectationsTest, ReplacesUnlimitedAndShadowMode) {
  const std::string d = "features";
  RateLimitResponse replaced = Call(d, {{{"client", "vip"}}, {{"client", "x"}}});
  // "vip" matches its own limit, which replaces per-client wherever the call matched it.
  ExpectLimit(replaced.statuses(0), 100, RateLimitResponse::RateLimit::MINUTE);
  ExpectNoLimit(replaced.statuses(1));
  RateLimitResponse both = Call(d, {{{"client", "vip"}}, {{"client", "vip"}}});
  EXPECT_EQ(both.statuses(1).limit_remaining(), 97U);  // 100, less 1 and 2
  const RateLimitResponse::DescriptorStatus open = One(d, {{"open", "x"}});
  EXPECT_EQ(open.code(), kOk);
  EXPECT_EQ(open.limit_remaining(), UINT32_MAX);
  EXPECT_EQ(One(d, {{"shadow", "s"}}).code(), kOk);
  const RateLimitResponse over = Call(d, {{{"shadow", "s"}}});
  EXPECT_EQ(over.overall_code(), kOk);  // over its limit, and still OK
  EXPECT_EQ(over.statuses(0).limit_remaining(), 0U);
}

TEST_F(EnvoyExpectationsTest, RequestSuppliedLimits) {
  RateLimitRequest request = RequestOf("features", {{{"client", "a"}}});
  request.mutable_descriptors(0)->mutable_limit()->set_requests_per_unit(2);
  request.mutable_descriptors(0)->mutable_limit()->set_unit(envoy::type::v3::SECOND);
  EXPECT_EQ(Call(request).statuses(0).limit_remaining(), 1U);
  EXPECT_EQ(Call(request).statuses(0).limit_remaining(), 0U);
  EXPECT_EQ(Call(request).overall_code(), kOver);
  // The configuration's limit for the same entries counts apart.
  EXPECT_EQ(One("features", {{"client", "a"}}).limit_remaining(), 9U);
  // An unknown domain applies no limit, even one the request brings.
  RateLimitRequest elsewhere = request;
  elsewhere.set_domain("unknown-domain");
  ExpectNoLimit(Call(elsewhere).statuses(0));
}

// After 15 of 20, a call of 7 is over with nothing left, and counted: the next call of 1 is
// over too. A look (hits 0) at exactly the limit is OK; in debt, over.
TEST_F(EnvoyExpectationsTest, EveryHitIsCountedAndABucketGoesIntoDebt) {
  const std::string d = "features";
  EXPECT_EQ(One(d, {{"daily", "u"}}, 15).limit_remaining(), 5U);
  EXPECT_EQ(One(d, {{"daily", "u"}}, 5).limit_remaining(), 0U);
  const RateLimitResponse::DescriptorStatus look = One(d, {{"daily", "l"}}, 0);
  EXPECT_EQ(look.code(), kOk);
  EXPECT_EQ(look.limit_remaining(), 20U);
  RateLimitRequest at_limit = RequestOf(d, {{{"daily", "u"}}});
  at_limit.mutable_descriptors(0)->mutable_hits_addend()->set_value(0);
  EXPECT_EQ(Call(at_limit).overall_code(), kOk);  // exactly at the limit: not over
  EXPECT_EQ(Call(at_limit).statuses(0).limit_remaining(), 0U);

  EXPECT_EQ(One(d, {{"daily", "v"}}, 15).code(), kOk);
  const RateLimitResponse::DescriptorStatus seven = One(d, {{"daily", "v"}}, 7);
  EXPECT_EQ(seven.code(), kOver);
  EXPECT_EQ(seven.limit_remaining(), 0U);
  EXPECT_EQ(One(d, {{"daily", "v"}}, 1).code(), kOver);
  RateLimitRequest look_in_debt = RequestOf(d, {{{"daily", "v"}}});
  look_in_debt.mutable_descriptors(0)->mutable_hits_addend()->set_value(0);
  EXPECT_EQ(Call(look_in_debt).overall_code(), kOver);
  // 3 hits owed at 20 a day: out of debt 3/20 of a day later, not before.
  clock_->Advance(3 * 86'400'000 / 20 - 1000);
  EXPECT_EQ(Call(look_in_debt).overall_code(), kOver);
  clock_->Advance(1001);  // a millisecond's slack for the doubles' rounding
  EXPECT_EQ(Call(look_in_debt).overall_code(), kOk);
}

TEST_F(EnvoyExpectationsTest, AHugeReportLocksOutForAboutOnePeriodAtMost) {
  EXPECT_EQ(One("features", {{"hourly", "h"}}, 4'000'000'000'000U).code(), kOver);
  clock_->Advance(3'600'000 - 1000);
  RateLimitRequest look = RequestOf("features", {{{"hourly", "h"}}});
  look.mutable_descriptors(0)->mutable_hits_addend()->set_value(0);
  EXPECT_EQ(Call(look).overall_code(), kOver);
  clock_->Advance(1001);  // a millisecond's slack for the doubles' rounding
  EXPECT_EQ(Call(look).overall_code(), kOk);
}

TEST_F(EnvoyExpectationsTest, HitsAddendOfTheDescriptorOverTheRequest) {
  RateLimitRequest request = RequestOf("features", {{{"daily", "a"}}, {{"daily", "b"}}});
  request.set_hits_addend(4);  // the request's, where a descriptor has none
  request.mutable_descriptors(1)->mutable_hits_addend()->set_value(2);
  RateLimitResponse response = Call(request);
  EXPECT_EQ(response.statuses(0).limit_remaining(), 16U);
  EXPECT_EQ(response.statuses(1).limit_remaining(), 18U);
}

TEST_F(EnvoyExpectationsTest, DurationUntilResetCountsDown) {
  const std::string d = "features";
  One(d, {{"daily", "c"}});
  const auto first = One(d, {{"daily", "c"}}, 0).duration_until_reset();
  clock_->Advance(2000);
  const auto later = One(d, {{"daily", "c"}}, 0).duration_until_reset();
  EXPECT_EQ(first.seconds(), 4320);  // one of 20 a day
  EXPECT_EQ(later.seconds(), 4318);
  One(d, {{"hourly", "c"}});
  clock_->Advance(2000);
  const RateLimitResponse looked = Call(d, {{{"hourly", "c"}}}, 0);
  EXPECT_EQ(looked.statuses(0).duration_until_reset().seconds(), 3598);
}

TEST_F(EnvoyExpectationsTest, TheSameDescriptorTwiceIsCountedInTurn) {
  RateLimitResponse response = Call("features", {{{"daily", "twice"}}, {{"daily", "twice"}}});
  EXPECT_EQ(response.statuses(0).limit_remaining(), 19U);
  EXPECT_EQ(response.statuses(1).limit_remaining(), 18U);
}

TEST_F(EnvoyExpectationsTest, HeadersDescribeTheLastDescriptorOverItsLimit) {
  const std::string d = "features";
  One(d, {{"hourly", "x"}});
  One(d, {{"window", "y"}}, 3);
  RateLimitResponse response = Call(d, {{{"daily", "z"}}, {{"hourly", "x"}}, {{"window", "y"}}});
  EXPECT_EQ(response.overall_code(), kOver);
  EXPECT_EQ(Header(response, "RateLimit-Limit"), "3");  // the window: the last over
  EXPECT_EQ(Header(response, "RateLimit-Remaining"), "0");
  RateLimitResponse calm = Call(d, {{{"daily", "w"}}, {{"client", "w"}}});
  EXPECT_EQ(Header(calm, "RateLimit-Limit"), "10");  // the fewest left
  EXPECT_EQ(Header(calm, "RateLimit-Remaining"), "9");
  EXPECT_EQ(Header(calm, "RateLimit-Reset"), "6");
}

TEST_F(EnvoyExpectationsTest, AUnitMultiplierIsALongerPeriod) {
  const auto status = One("features", {{"window", "m"}});
  ExpectLimit(status, 3, RateLimitResponse::RateLimit::SECOND);  // the unit as configured
  EXPECT_EQ(status.duration_until_reset().seconds(), 10);        // 1 of 3 per 30 s
}

TEST_F(EnvoyExpectationsTest, UnknownDomainsAndMalformedCalls) {
  ExpectNoLimit(One("no-such-domain", {{"key1", "value1"}}));
  std::optional<Result<RateLimitResponse>> answer;
  service_->ShouldRateLimit(RequestOf("", {{{"key", "v"}}}),
                            [&](Result<RateLimitResponse> r) { answer = std::move(r); });
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status().code(), StatusCode::kInvalidArgument);
}

TEST_F(EnvoyExpectationsTest, RefusedFiles) {
  const std::vector<std::pair<const char*, const char*>> refused = {
      {"domain: d\ndescriptors:\n  - {key: k, value: v}\n  - {key: k, value: v}\n",
       "duplicate descriptor"},
      {"domain: d\ndescriptors:\n  - {key: k, ratelimit: {unit: second}}\n", "ratelimit"},
      {"domain: d\ndescriptors:\n  - {key: k, rate_limit: {unlimited: true, unit: second}}\n",
       "not allowed when unlimited"},
      {"domain: d\ndescriptors:\n  - {key: k, rate_limit: {unit: second, requests_per_unit: 1, "
       "unit_multiplier: 0}}\n",
       "at least 1"},
      {"domain: d\ndescriptors:\n  - {key: k, rate_limit: {unit: second, name: a, replaces: "
       "[{name: a}]}}\n",
       "the limit itself"},
      {"domain: d\ndescriptors:\n  - {key: k, rate_limit: {unit: fortnight}}\n", "fortnight"},
      {"domain: ''\n", "domain"},
      {"domain: d\ndescriptors:\n  - key: k\n    descriptors: [1]\n", "descriptors"},
  };
  for (const auto& [yaml, why] : refused) {
    Result<DomainConfig> config = ParseDomainConfig(yaml, "refused.yaml");
    ASSERT_FALSE(config.ok()) << yaml;
    EXPECT_NE(config.status().message().find(why), std::string::npos) << config.status().message();
  }
}

// rls.policy decides what the other descriptors of a call over its limit pay; the descriptor
// over its limit always counts its own hits.
TEST_F(EnvoyExpectationsTest, PoliciesSpareTheOtherDescriptors) {
  const std::vector<std::pair<MultiRulePolicy, uint32_t>> cases = {
      {MultiRulePolicy::kChargeAll, 17},
      {MultiRulePolicy::kStopAtFirst, 19},
      {MultiRulePolicy::kRefund, 19},
      {MultiRulePolicy::kAllOrNothing, 19}};
  int n = 0;
  for (const auto& [policy, daily_left] : cases) {
    ServiceOptions options;
    options.policy = policy;
    Configure(options);
    const std::string hourly = "p" + std::to_string(n);
    const std::string daily = "q" + std::to_string(n++);
    One("features", {{"hourly", hourly}});
    One("features", {{"daily", daily}});
    RateLimitResponse response = Call("features", {{{"hourly", hourly}}, {{"daily", daily}}}, 2);
    EXPECT_EQ(response.overall_code(), kOver);
    EXPECT_EQ(One("features", {{"daily", daily}}, 0).limit_remaining(), daily_left)
        << static_cast<int>(policy);
    // The hourly bucket counted its 2 hits, into a debt bounded at one period's tokens (1): a
    // look stays over for an hour.
    clock_->Advance(3'600'000 - 1000);
    EXPECT_EQ(One("features", {{"hourly", hourly}}, 0).code(), kOver);
    clock_->Advance(1001);
    EXPECT_EQ(One("features", {{"hourly", hourly}}, 0).code(), kOk);
  }
}

TEST_F(EnvoyExpectationsTest, TheOverLimitCacheAnswersABucketInDebtWithoutTheStore) {
  ServiceOptions options;
  options.over_limit_cache = std::make_shared<OverLimitCache>(clock_, 100);
  Configure(options);
  One("features", {{"hourly", "c"}});
  EXPECT_EQ(One("features", {{"hourly", "c"}}).code(), kOver);  // now in debt: remembered
  const size_t buckets = store_->BucketCount();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(One("features", {{"hourly", "c"}}).code(), kOver);
  EXPECT_EQ(service_->Stats().over_limit_with_local_cache, 5U);
  EXPECT_EQ(store_->BucketCount(), buckets);
  // The hits the cache answered were not sent: out of debt in an hour, a token back in two.
  clock_->Advance(2 * 3'600'000 + 1);
  EXPECT_EQ(One("features", {{"hourly", "c"}}).code(), kOk);
}

}  // namespace
}  // namespace sluice::rls
