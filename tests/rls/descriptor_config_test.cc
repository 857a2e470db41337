#include "rls/descriptor_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace sluice::rls {
namespace {

DomainConfig Parse(const std::string& yaml) {
  Result<DomainConfig> config = ParseDomainConfig(yaml, "test.yaml");
  EXPECT_TRUE(config.ok()) << config.status().message();
  return config.ok() ? *config : DomainConfig{};
}

// The message of a refused file (empty when it was accepted, which fails the test).
std::string Refusal(const std::string& yaml) {
  Result<DomainConfig> config = ParseDomainConfig(yaml, "test.yaml");
  EXPECT_FALSE(config.ok()) << yaml;
  return config.status().message();
}

TEST(DescriptorConfigTest, ReadsEnvoyRatelimitsFormat) {
  DomainConfig config = Parse(R"(
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: Second, requests_per_unit: 10, name: per-ip}
  - key: path
    value: /login
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 5}
    descriptors:
      - key: user
        rate_limit: {unlimited: true}
)");
  EXPECT_EQ(config.domain, "edge");
  ASSERT_EQ(config.descriptors.size(), 2U);
  const DescriptorNode& ip = config.descriptors[0];
  EXPECT_EQ(ip.key, "remote_address");
  EXPECT_EQ(ip.value, "");
  ASSERT_TRUE(ip.rate_limit);
  EXPECT_EQ(ip.rate_limit->requests_per_unit, 10U);
  EXPECT_EQ(ip.rate_limit->unit, Unit::kSecond);
  EXPECT_EQ(ip.rate_limit->name, "per-ip");
  const DescriptorNode& login = config.descriptors[1];
  EXPECT_TRUE(login.shadow_mode);
  EXPECT_EQ(login.rate_limit->unit, Unit::kMinute);
  ASSERT_EQ(login.descriptors.size(), 1U);
  EXPECT_TRUE(login.descriptors[0].rate_limit->unlimited);
}

TEST(DescriptorConfigTest, AcceptsEveryUnitInAnyCase) {
  for (const auto& [name, unit] :
       std::vector<std::pair<std::string, Unit>>{{"second", Unit::kSecond},
                                                 {"MINUTE", Unit::kMinute},
                                                 {"Hour", Unit::kHour},
                                                 {"day", Unit::kDay},
                                                 {"week", Unit::kWeek},
                                                 {"month", Unit::kMonth},
                                                 {"year", Unit::kYear}}) {
    DomainConfig config =
        Parse("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: " + name +
              ", requests_per_unit: 1}\n");
    EXPECT_EQ(config.descriptors.at(0).rate_limit->unit, unit) << name;
  }
  EXPECT_EQ(UnitMs(Unit::kMonth), 30LL * 86'400'000);
  EXPECT_EQ(UnitMs(Unit::kYear), 365LL * 86'400'000);
}

TEST(DescriptorConfigTest, AcceptsTheFieldsItDoesNotActOn) {
  DomainConfig config = Parse(R"(
domain: d
descriptors:
  - key: k
    value: v*
    detailed_metric: true
    value_to_metric: true
    share_threshold: true
    quota_mode: true
    metadata: {owner: team-a, tags: [x, y]}
    rate_limit: {unit: second, requests_per_unit: 1}
)");
  EXPECT_TRUE(config.descriptors.at(0).share_threshold);
  EXPECT_TRUE(config.descriptors.at(0).IsWildcard());
}

// envoyproxy/ratelimit reads YAML 1.1, whose booleans include yes/no and on/off.
TEST(DescriptorConfigTest, ReadsYaml11Booleans) {
  DomainConfig config = Parse(R"(
domain: d
descriptors:
  - key: a
    shadow_mode: yes
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: b
    shadow_mode: Off
    rate_limit: {unlimited: True}
)");
  EXPECT_TRUE(config.descriptors.at(0).shadow_mode);
  EXPECT_FALSE(config.descriptors.at(1).shadow_mode);
  EXPECT_TRUE(config.descriptors.at(1).rate_limit->unlimited);
}

TEST(DescriptorConfigTest, AnEmptyDescriptorListIsAllowed) {
  EXPECT_TRUE(Parse("domain: d\n").descriptors.empty());
  EXPECT_TRUE(Parse("domain: d\ndescriptors:\n").descriptors.empty());
}

TEST(DescriptorConfigTest, RefusesWhatEnvoyRatelimitRefuses) {
  EXPECT_NE(
      Refusal("domain: d\ndescriptors: []\nextra: 1\n").find("test.yaml:3: extra: unknown field"),
      std::string::npos);
  EXPECT_NE(Refusal("domain: \"\"\n").find("domain: must not be empty"), std::string::npos);
  EXPECT_NE(Refusal("descriptors: []\n").find("domain: must not be empty"), std::string::npos);
  EXPECT_NE(Refusal("domain: d\ndomain: e\n").find("domain: given twice"), std::string::npos);
  EXPECT_NE(Refusal("domain: d\ndescriptors:\n  - value: v\n").find("descriptors[0]: needs a key"),
            std::string::npos);
  EXPECT_NE(Refusal("domain: d\ndescriptors:\n  - key: k\n    kee: v\n")
                .find("descriptors[0].kee: unknown field"),
            std::string::npos);
  EXPECT_NE(Refusal("domain: d\ndescriptors:\n  - key: k\n    value: v\n  - key: k\n    value: v\n")
                .find("test.yaml:5: descriptors[1]: duplicate descriptor"),
            std::string::npos);
  EXPECT_NE(Refusal("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, "
                    "requests_per_unit: 1}\n")
                .find("rate_limit.unit: \"fortnight\" is not one of"),
            std::string::npos);
  EXPECT_NE(Refusal("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {requests_per_unit: 1}\n")
                .find("needs a unit"),
            std::string::npos);
  EXPECT_NE(Refusal("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unlimited: true, unit: "
                    "second}\n")
                .find("rate_limit.unit: not allowed when unlimited"),
            std::string::npos);
  EXPECT_NE(Refusal("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, "
                    "requests_per_unit: -1}\n")
                .find("must be a whole number"),
            std::string::npos);
  EXPECT_NE(Refusal("domain: d\ndescriptors:\n  - key: k\n    shadow_mode: maybe\n")
                .find("must be true or false"),
            std::string::npos);
  EXPECT_NE(Refusal("domain: [d\n").find("test.yaml:"), std::string::npos);
  EXPECT_NE(Refusal("").find("the file is empty"), std::string::npos);
  EXPECT_NE(Refusal("- just a list\n").find("must be a mapping"), std::string::npos);
}

TEST(DescriptorConfigTest, ReplacesMustNameAnotherLimitOfTheDomain) {
  const std::string base = R"(
domain: d
descriptors:
  - key: a
    rate_limit: {unit: second, requests_per_unit: 1, name: first}
  - key: b
    rate_limit: {unit: second, requests_per_unit: 1, name: second, replaces: [{name: )";
  EXPECT_EQ(Parse(base + "first}]}\n").descriptors[1].rate_limit->replaces,
            std::vector<std::string>{"first"});
  EXPECT_NE(Refusal(base + "third}]}\n").find("\"third\" names no rate limit of the domain"),
            std::string::npos);
  EXPECT_NE(Refusal(base + "second}]}\n").find("\"second\" is the limit itself"),
            std::string::npos);
}

class DescriptorFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("sluice-rls-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "folder");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }

  std::filesystem::path dir_;
};

TEST_F(DescriptorFilesTest, ReadsFilesAndTheYamlFilesOfFolders) {
  Write("folder/b.yaml", "domain: b\n");
  Write("folder/a.yml", "domain: a\n");
  Write("folder/notes.txt", "not yaml at all: [");
  const std::string single = Write("c.yaml", "domain: c\n");
  auto configs = LoadDomainConfigs({(dir_ / "folder").string(), single});
  ASSERT_TRUE(configs.ok()) << configs.status().message();
  ASSERT_EQ(configs->size(), 3U);
  EXPECT_EQ((*configs)[0].domain, "a");
  EXPECT_EQ((*configs)[1].domain, "b");
  EXPECT_EQ((*configs)[2].domain, "c");
}

TEST_F(DescriptorFilesTest, RefusesOneDomainInTwoFilesAndFilesThatCannotBeRead) {
  const std::string one = Write("one.yaml", "domain: same\n");
  const std::string two = Write("two.yaml", "domain: same\n");
  auto twice = LoadDomainConfigs({one, two});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("domain \"same\" is already defined in " + one),
            std::string::npos);
  auto missing = LoadDomainConfigs({(dir_ / "missing.yaml").string()});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot be read"), std::string::npos);
}

}  // namespace
}  // namespace sluice::rls
