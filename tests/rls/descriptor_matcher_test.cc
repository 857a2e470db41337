#include "rls/descriptor_matcher.h"

#include <gtest/gtest.h>

namespace sluice::rls {
namespace {

DescriptorMatcher Matcher(const std::string& yaml) {
  Result<DomainConfig> config = ParseDomainConfig(yaml, "test.yaml");
  EXPECT_TRUE(config.ok()) << config.status().message();
  std::vector<DomainConfig> domains;
  if (config.ok()) domains.push_back(std::move(config).value());
  return DescriptorMatcher(std::move(domains));
}

// The requests_per_unit of the matched limit, or -1 when nothing matched.
int64_t LimitOf(const DescriptorMatcher& matcher, const Entries& entries,
                std::string_view domain = "d") {
  std::optional<Match> match = matcher.Find(domain, entries);
  return match ? static_cast<int64_t>(match->limit->requests_per_unit) : -1;
}

const char* const kMatcherConfig = R"(
domain: d
descriptors:
  - key: client
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: client
    value: vip
    rate_limit: {unit: second, requests_per_unit: 2}
  - key: client
    value: partner-*
    rate_limit: {unit: second, requests_per_unit: 3}
  - key: client
    value: partner-big-*
    rate_limit: {unit: second, requests_per_unit: 4}
  - key: route
    value: /api
    descriptors:
      - key: method
        value: POST
        rate_limit: {unit: second, requests_per_unit: 5}
      - key: method
        rate_limit: {unit: second, requests_per_unit: 6}
  - key: shared
    value: team-*
    share_threshold: true
    shadow_mode: true
    rate_limit: {unit: second, requests_per_unit: 7}
)";

TEST(DescriptorMatcherTest, TheMostSpecificNodeWins) {
  DescriptorMatcher matcher = Matcher(kMatcherConfig);
  EXPECT_EQ(LimitOf(matcher, {{"client", "vip"}}), 2);
  EXPECT_EQ(LimitOf(matcher, {{"client", "partner-x"}}), 3);
  EXPECT_EQ(LimitOf(matcher, {{"client", "partner-big-x"}}), 4);  // the longer prefix
  EXPECT_EQ(LimitOf(matcher, {{"client", "anyone"}}), 1);
  EXPECT_EQ(LimitOf(matcher, {{"client", ""}}), 1);
}

TEST(DescriptorMatcherTest, NestedDescriptorsMatchAtTheirDepthOnly) {
  DescriptorMatcher matcher = Matcher(kMatcherConfig);
  EXPECT_EQ(LimitOf(matcher, {{"route", "/api"}, {"method", "POST"}}), 5);
  EXPECT_EQ(LimitOf(matcher, {{"route", "/api"}, {"method", "GET"}}), 6);
  EXPECT_EQ(LimitOf(matcher, {{"route", "/api"}}), -1);  // the node has no limit of its own
  EXPECT_EQ(LimitOf(matcher, {{"route", "/other"}, {"method", "POST"}}), -1);
  EXPECT_EQ(LimitOf(matcher, {{"route", "/api"}, {"method", "POST"}, {"extra", "x"}}), -1);
  EXPECT_EQ(LimitOf(matcher, {{"method", "POST"}}), -1);
  EXPECT_EQ(LimitOf(matcher, {}), -1);
  EXPECT_EQ(LimitOf(matcher, {{"client", "vip"}}, "unknown-domain"), -1);
}

TEST(DescriptorMatcherTest, SaysWhatCounts) {
  DescriptorMatcher matcher = Matcher(kMatcherConfig);
  auto per_value = matcher.Find("d", {{"route", "/api"}, {"method", "GET"}});
  ASSERT_TRUE(per_value);
  EXPECT_EQ(per_value->counted, (std::vector<std::pair<std::string, std::string>>{
                                    {"route", "/api"}, {"method", "GET"}}));
  EXPECT_FALSE(per_value->shadow_mode);
  auto shared = matcher.Find("d", {{"shared", "team-a"}});
  ASSERT_TRUE(shared);
  EXPECT_EQ(shared->counted,
            (std::vector<std::pair<std::string, std::string>>{{"shared", "team-*"}}));
  EXPECT_TRUE(shared->shadow_mode);
  EXPECT_EQ(matcher.Find("d", {{"client", "partner-x"}})->counted.at(0).second, "partner-x");
}

}  // namespace
}  // namespace sluice::rls
