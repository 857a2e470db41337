#include "rls/rate_limit_plan.h"

#include <gtest/gtest.h>

#include "rls/rate_limit_requests.h"

namespace sluice::rls {
namespace {

using Status_ = RateLimitResponse::DescriptorStatus;

const char* const kPlanConfig = R"(
domain: d
descriptors:
  - key: client
    rate_limit: {unit: minute, requests_per_unit: 10, name: per-client}
  - key: client
    value: free
    rate_limit: {unit: second, requests_per_unit: 2, name: free, replaces: [{name: per-client}]}
  - key: tier
    value: open
    rate_limit: {unlimited: true}
  - key: tier
    value: closed
    rate_limit: {unit: second, requests_per_unit: 0}
  - key: canary
    shadow_mode: true
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: burst
    rate_limit: {unit: second, requests_per_unit: 2, name: burst}
)";

class RateLimitPlanTest : public ::testing::Test {
 protected:
  RateLimitPlanTest() {
    Result<DomainConfig> config = ParseDomainConfig(kPlanConfig, "test.yaml");
    EXPECT_TRUE(config.ok()) << config.status().message();
    std::vector<DomainConfig> domains;
    domains.push_back(std::move(config).value());
    matcher_ = std::make_unique<DescriptorMatcher>(std::move(domains));
  }

  static RateLimitRequest Request(const std::vector<DescriptorEntries>& descriptors,
                                  std::string domain = "d") {
    return RequestOf(std::move(domain), descriptors);
  }

  Plan PlanOf(const RateLimitRequest& request) const {
    Result<Plan> plan = PlanRequest(*matcher_, request, "rl:");
    EXPECT_TRUE(plan.ok()) << plan.status().message();
    return plan.ok() ? *plan : Plan{};
  }

  std::unique_ptr<DescriptorMatcher> matcher_;
};

TEST_F(RateLimitPlanTest, OneBucketPerLimitedDescriptorUnderAnEncodedKey) {
  Plan plan = PlanOf(Request({{{"client", "a:b"}}, {{"nothing", "x"}}, {{"tier", "open"}}}));
  ASSERT_EQ(plan.ops.size(), 1U);
  EXPECT_EQ(plan.ops[0].key, "rl:rls:d:client=a%3Ab");
  EXPECT_EQ(plan.ops[0].limit, (Limit{10, 10, 60'000}));
  EXPECT_EQ(plan.ops[0].cost, 1);
  EXPECT_EQ(plan.descriptors[0].kind, MatchedDescriptor::Kind::kLimited);
  EXPECT_EQ(plan.descriptors[1].kind, MatchedDescriptor::Kind::kNoLimit);
  EXPECT_EQ(plan.descriptors[2].kind, MatchedDescriptor::Kind::kUnlimited);
}

TEST_F(RateLimitPlanTest, NoTwoDescriptorsShareAKeyByTheirSeparators) {
  // "client" = "x=y" must not meet a domain or entry that spells the same characters.
  const std::string one = PlanOf(Request({{{"client", "x=y"}}})).ops.at(0).key;
  const std::string two = PlanOf(Request({{{"client", "x"}}})).ops.at(0).key;
  EXPECT_NE(one, two);
  EXPECT_EQ(one.find('=', one.find("client=") + 7), std::string::npos);
}

TEST_F(RateLimitPlanTest, HitsAddendOfTheDescriptorOverTheRequest) {
  RateLimitRequest request = Request({{{"client", "a"}}, {{"client", "b"}}});
  request.set_hits_addend(3);
  request.mutable_descriptors(1)->mutable_hits_addend()->set_value(0);
  Plan plan = PlanOf(request);
  EXPECT_EQ(plan.ops.at(0).cost, 3);
  EXPECT_EQ(plan.ops.at(1).cost, 0);  // a look
  EXPECT_TRUE(plan.ops.at(0).debt);
  // A look at an empty bucket is OK with nothing left; at a bucket in debt, over the limit.
  EXPECT_EQ(Respond(plan, {{true, 7, 0}, {true, 0, 0}}, std::nullopt).overall_code(),
            RateLimitResponse::OK);
  RateLimitResponse response = Respond(plan, {{true, 7, 0}, {false, 0, 600}}, std::nullopt);
  EXPECT_EQ(response.statuses(0).code(), RateLimitResponse::OK);
  EXPECT_EQ(response.statuses(1).code(), RateLimitResponse::OVER_LIMIT);
}

TEST_F(RateLimitPlanTest, EveryHitIsChargedEvenPastTheLimit) {
  RateLimitRequest request = Request({{{"client", "a"}}});
  request.set_hits_addend(11);
  Plan plan = PlanOf(request);
  EXPECT_EQ(plan.ops.at(0).cost, 11);
  EXPECT_TRUE(plan.ops.at(0).debt);
  RateLimitResponse response = Respond(plan, {{false, 0, 6000, 0, 66'000}}, std::nullopt);
  EXPECT_EQ(response.overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(response.statuses(0).limit_remaining(), 0U);
  EXPECT_EQ(response.statuses(0).duration_until_reset().seconds(), 66);
}

TEST_F(RateLimitPlanTest, TheSameDescriptorTwiceIsCountedInTurn) {
  Plan plan = PlanOf(Request({{{"client", "a"}}, {{"client", "a"}}}));
  ASSERT_EQ(plan.ops.size(), 2U);
  EXPECT_EQ(plan.ops[0].key, plan.ops[1].key);
  EXPECT_EQ(plan.ops[0].cost, 1);
  EXPECT_EQ(plan.ops[1].cost, 1);
  RateLimitResponse response =
      Respond(plan, {{true, 9, 0, 0, 6000}, {true, 8, 0, 0, 12'000}}, std::nullopt);
  EXPECT_EQ(response.statuses(0).limit_remaining(), 9U);
  EXPECT_EQ(response.statuses(1).limit_remaining(), 8U);
}

TEST_F(RateLimitPlanTest, AReplacedLimitIsNotApplied) {
  Plan plan = PlanOf(Request({{{"client", "a"}}, {{"client", "free"}}}));
  ASSERT_EQ(plan.ops.size(), 1U);
  EXPECT_EQ(plan.descriptors[0].kind, MatchedDescriptor::Kind::kNoLimit);
  EXPECT_EQ(plan.descriptors[1].limit.name, "free");
}

TEST_F(RateLimitPlanTest, ADescriptorsOwnLimitCountsApart) {
  RateLimitRequest request = Request({{{"client", "a"}}});
  request.mutable_descriptors(0)->mutable_limit()->set_requests_per_unit(42);
  request.mutable_descriptors(0)->mutable_limit()->set_unit(envoy::type::v3::HOUR);
  Plan plan = PlanOf(request);
  EXPECT_EQ(plan.ops.at(0).limit, (Limit{42, 42, 3'600'000}));
  EXPECT_EQ(plan.ops.at(0).key, "rl:rls-own:42/3:d:client=a");
}

// Two own limits for the same entries are two buckets: a cost that fits the larger one is not
// charged against the smaller one's capacity.
TEST_F(RateLimitPlanTest, TwoOwnLimitsForTheSameEntriesCountApart) {
  RateLimitRequest request = Request({{{"client", "a"}}, {{"client", "a"}}});
  request.mutable_descriptors(0)->mutable_limit()->set_requests_per_unit(1);
  request.mutable_descriptors(0)->mutable_limit()->set_unit(envoy::type::v3::SECOND);
  request.mutable_descriptors(1)->mutable_limit()->set_requests_per_unit(100);
  request.mutable_descriptors(1)->mutable_limit()->set_unit(envoy::type::v3::SECOND);
  request.set_hits_addend(50);
  Plan plan = PlanOf(request);
  ASSERT_EQ(plan.ops.size(), 2U);
  EXPECT_NE(plan.ops[0].key, plan.ops[1].key);
  EXPECT_EQ(plan.ops[0].limit.capacity, 1);
  EXPECT_EQ(plan.ops[0].cost, 50);  // all of it, into debt
  EXPECT_EQ(plan.ops[1].limit.capacity, 100);
  EXPECT_EQ(plan.ops[1].cost, 50);
}

TEST_F(RateLimitPlanTest, MalformedRequestsAreRefused) {
  EXPECT_EQ(PlanRequest(*matcher_, Request({{{"client", "a"}}}, ""), "rl:").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanRequest(*matcher_, Request({}), "rl:").status().code(),
            StatusCode::kInvalidArgument);
  RateLimitRequest too_many = Request({});
  for (int i = 0; i <= kMaxDescriptors; ++i) {
    too_many.add_descriptors()->add_entries()->set_key("client");
  }
  EXPECT_EQ(PlanRequest(*matcher_, too_many, "rl:").status().code(), StatusCode::kInvalidArgument);
  auto too_long = PlanRequest(*matcher_, Request({{{"client", std::string(2000, 'x')}}}), "rl:");
  EXPECT_EQ(too_long.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(RateLimitPlanTest, AnUnknownDomainLimitsNothing) {
  Plan plan = PlanOf(Request({{{"client", "a"}}}, "elsewhere"));
  EXPECT_TRUE(plan.ops.empty());
  RateLimitResponse response = Respond(plan, {}, std::nullopt);
  EXPECT_EQ(response.overall_code(), RateLimitResponse::OK);
  EXPECT_FALSE(response.statuses(0).has_current_limit());
}

TEST_F(RateLimitPlanTest, EveryStatusSaysLimitRemainingAndReset) {
  Plan plan = PlanOf(
      Request({{{"client", "a"}}, {{"tier", "open"}}, {{"tier", "closed"}}, {{"canary", "x"}}}));
  ASSERT_EQ(plan.ops.size(), 2U);
  RateLimitResponse response =
      Respond(plan, {{true, 4, 0, 0, 35'500}, {false, 0, 1000, 0, 1500}}, std::nullopt);
  EXPECT_EQ(response.overall_code(), RateLimitResponse::OVER_LIMIT);
  const Status_& client = response.statuses(0);
  EXPECT_EQ(client.code(), RateLimitResponse::OK);
  EXPECT_EQ(client.current_limit().name(), "per-client");
  EXPECT_EQ(client.current_limit().requests_per_unit(), 10U);
  EXPECT_EQ(client.current_limit().unit(), RateLimitResponse::RateLimit::MINUTE);
  EXPECT_EQ(client.limit_remaining(), 4U);
  EXPECT_EQ(client.duration_until_reset().seconds(), 35);  // the bucket's exact state
  EXPECT_EQ(client.duration_until_reset().nanos(), 500'000'000);
  EXPECT_EQ(response.statuses(1).code(), RateLimitResponse::OK);
  EXPECT_EQ(response.statuses(1).limit_remaining(), UINT32_MAX);
  EXPECT_EQ(response.statuses(2).code(), RateLimitResponse::OVER_LIMIT);  // zero a second
  EXPECT_EQ(response.statuses(3).code(), RateLimitResponse::OK);          // shadow
  EXPECT_EQ(response.statuses(3).duration_until_reset().seconds(), 1);
  EXPECT_EQ(response.response_headers_to_add_size(), 0);
}

TEST_F(RateLimitPlanTest, HeadersDescribeTheDescriptorOverTheLimit) {
  Plan plan = PlanOf(Request({{{"client", "a"}}, {{"burst", "x"}}, {{"canary", "x"}}}));
  RateLimitResponse response =
      Respond(plan, {{true, 4, 0, 0, 36'000}, {false, 0, 500, 0, 1000}, {false, 0, 1000, 0, 2000}},
              config::RlsHeaderNames{"X-Limit", "X-Remaining", "X-Reset"});
  ASSERT_EQ(response.response_headers_to_add_size(), 3);
  EXPECT_EQ(response.response_headers_to_add(0).key(), "X-Limit");
  EXPECT_EQ(response.response_headers_to_add(0).value(), "2");
  EXPECT_EQ(response.response_headers_to_add(1).key(), "X-Remaining");
  EXPECT_EQ(response.response_headers_to_add(1).value(), "0");
  EXPECT_EQ(response.response_headers_to_add(2).key(), "X-Reset");
  EXPECT_EQ(response.response_headers_to_add(2).value(), "1");
}

// envoyproxy/ratelimit's choice: the last descriptor over its limit; when none is, the first
// with the fewest requests left (a shadow limit's OK status included).
TEST_F(RateLimitPlanTest, HeadersDescribeTheLastOverElseTheFirstWithTheLeastLeft) {
  const config::RlsHeaderNames names;
  auto header = [](const RateLimitResponse& response, int i) {
    return response.response_headers_to_add(i).value();
  };
  Plan plan = PlanOf(Request({{{"client", "a"}}, {{"burst", "x"}}, {{"client", "b"}}}));
  RateLimitResponse two_over = Respond(
      plan, {{false, 0, 500, 0, 61'000}, {false, 0, 500, 0, 2000}, {true, 3, 0, 0, 42'000}}, names);
  EXPECT_EQ(header(two_over, 0), "2");  // burst, the later of the two over
  EXPECT_EQ(header(two_over, 2), "2");
  RateLimitResponse none_over = Respond(
      plan, {{true, 3, 0, 0, 42'000}, {true, 1, 0, 0, 500}, {true, 1, 0, 0, 54'000}}, names);
  EXPECT_EQ(header(none_over, 0), "2");  // burst, the first with 1 left
  EXPECT_EQ(header(none_over, 1), "1");
  EXPECT_EQ(header(none_over, 2), "1");  // 500 ms, rounded up
}

const char* const kQuotaConfig = R"(
domain: q
descriptors:
  - key: model
    value: small
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: model
    value: large
    rate_limit: {unit: minute, requests_per_unit: 10, quota_mode: true}
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 5, unit_multiplier: 5}
)";

class QuotaModeTest : public ::testing::Test {
 protected:
  QuotaModeTest() {
    std::vector<DomainConfig> domains;
    domains.push_back(*ParseDomainConfig(kQuotaConfig, "quota.yaml"));
    matcher_ = std::make_unique<DescriptorMatcher>(std::move(domains));
  }
  std::unique_ptr<DescriptorMatcher> matcher_;
};

TEST_F(QuotaModeTest, AQuotaOverItsLimitIsOverOnlyWithTheOthers) {
  Result<Plan> plan = PlanRequest(
      *matcher_, RequestOf("q", {{{"model", "small"}}, {{"model", "large"}}, {{"user", "u"}}}),
      "rl:");
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->descriptors[0].quota_mode);  // on the descriptor
  EXPECT_TRUE(plan->descriptors[1].quota_mode);  // on its rate_limit
  EXPECT_FALSE(plan->ops[0].enforced);
  const BucketReply ok{true, 3, 0, 0, 1000};
  const BucketReply over{false, 0, 100, 0, 1000};
  RateLimitResponse one = Respond(*plan, {over, ok, ok}, std::nullopt);
  EXPECT_EQ(one.overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(one.statuses(0).code(), RateLimitResponse::OK);
  RateLimitResponse both = Respond(*plan, {over, over, ok}, std::nullopt);
  EXPECT_EQ(both.overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(both.statuses(0).code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(both.statuses(1).code(), RateLimitResponse::OVER_LIMIT);
  RateLimitResponse other = Respond(*plan, {ok, ok, over}, std::nullopt);
  EXPECT_EQ(other.overall_code(), RateLimitResponse::OVER_LIMIT);
  // rls.quota_mode puts every limit of the call in quota mode.
  Result<Plan> all = PlanRequest(*matcher_, RequestOf("q", {{{"user", "u"}}}), "rl:", true);
  EXPECT_EQ(Respond(*all, {over}, std::nullopt).overall_code(), RateLimitResponse::OVER_LIMIT);
}

TEST_F(QuotaModeTest, AUnitMultiplierMakesALongerPeriod) {
  Result<Plan> plan = PlanRequest(*matcher_, RequestOf("q", {{{"user", "u"}}}), "rl:");
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->ops[0].limit, (Limit{5, 5, 300'000}));
  RateLimitResponse response = Respond(*plan, {{true, 4, 0, 0, 60'000}}, std::nullopt);
  // current_limit has no field for the multiplier: it says the unit as configured.
  EXPECT_EQ(response.statuses(0).current_limit().unit(), RateLimitResponse::RateLimit::MINUTE);
  EXPECT_EQ(response.statuses(0).current_limit().requests_per_unit(), 5U);
}

TEST_F(RateLimitPlanTest, WithoutTheStoreTheFailurePolicyDecides) {
  Plan plan = PlanOf(Request({{{"client", "a"}}, {{"nothing", "x"}}, {{"canary", "x"}}}));
  EXPECT_EQ(RespondUnchecked(plan, true).overall_code(), RateLimitResponse::OK);
  RateLimitResponse closed = RespondUnchecked(plan, false);
  EXPECT_EQ(closed.overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(closed.statuses(1).code(), RateLimitResponse::OK);
  EXPECT_EQ(closed.statuses(2).code(), RateLimitResponse::OK);
}

}  // namespace
}  // namespace sluice::rls

namespace sluice::rls {
namespace {

// How /debug/top names a limit: its name, else its descriptor path as envoyproxy/ratelimit names
// its statistics, else (a descriptor's own limit) its keys.
TEST(LimitLabelTest, NameElsePathElseKeys) {
  Result<DomainConfig> config = ParseDomainConfig(R"(
domain: edge
descriptors:
  - key: key
    value: value
    descriptors:
      - key: key2
        rate_limit: {unit: second, requests_per_unit: 1}
  - key: user
    rate_limit: {unit: second, requests_per_unit: 1, name: per_user}
)",
                                                  "edge.yaml");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->descriptors[0].descriptors[0].rate_limit->path, "key_value.key2");
  std::vector<DomainConfig> domains;
  domains.push_back(std::move(config).value());
  const DescriptorMatcher matcher(std::move(domains));
  RateLimitRequest request =
      RequestOf("edge", {{{"key", "value"}, {"key2", "v2"}}, {{"user", "u_1"}}});
  auto* own = request.add_descriptors();
  auto* entry = own->add_entries();
  entry->set_key("tenant");
  entry->set_value("t1");
  own->mutable_limit()->set_requests_per_unit(5);
  own->mutable_limit()->set_unit(envoy::type::v3::SECOND);
  Result<Plan> plan = PlanRequest(matcher, request, "rl:");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(LimitLabel(*plan, plan->descriptors[0]), "edge/key_value.key2");
  EXPECT_EQ(LimitLabel(*plan, plan->descriptors[1]), "edge/per_user");
  EXPECT_EQ(LimitLabel(*plan, plan->descriptors[2]), "edge/tenant");
  EXPECT_EQ(plan->descriptors[1].counted,
            (std::vector<std::pair<std::string, std::string>>{{"user", "u_1"}}));
}

}  // namespace
}  // namespace sluice::rls
