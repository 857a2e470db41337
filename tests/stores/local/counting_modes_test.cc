// The registry of counting modes: each mode's fields are rule fields of the schema, and each
// mode is found by its Counting value and by its name in a rule.
#include "stores/local/counting_modes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "config/config.h"
#include "config/schema.h"

namespace sluice::stores {
namespace {

Result<config::Config> WithRule(const std::string& rule) {
  return config::ParseConfig("upstream: {address: 127.0.0.1:9000}\nrules:\n  - " + rule + "\n",
                             "sluice.yaml");
}

TEST(CountingModesTest, EachModeIsFoundByItsValueAndItsFieldsAreRuleFields) {
  const std::vector<std::string_view> rule_fields = config::KeysOf("rules[]");
  ASSERT_FALSE(CountingModes().empty());
  EXPECT_EQ(CountingModes().front().mode, Counting::kShared);  // the default
  for (const CountingMode& mode : CountingModes()) {
    EXPECT_EQ(&CountingModeOf(mode.mode), &mode);
    for (std::string_view field : mode.fields) {
      EXPECT_NE(std::find(rule_fields.begin(), rule_fields.end(), field), rule_fields.end())
          << mode.name << " takes " << field;
    }
  }
}

TEST(CountingModesTest, ARuleNamesItsModeAndTakesOnlyItsModesFields) {
  Result<config::Config> leased = WithRule(
      "{name: r, key: ip, capacity: 100, period: 1s, counting: leased, "
      "lease: {max_fraction: 0.25, ttl: 2s}}");
  ASSERT_TRUE(leased.ok()) << leased.status().message();
  const LocalCounting& counting = leased->rules[0].counting;
  EXPECT_EQ(counting.mode, Counting::kLeased);
  EXPECT_EQ(counting.lease_max_fraction, 0.25);
  EXPECT_EQ(counting.lease_ttl_ms, 2000);
  nlohmann::json status;
  CountingModeOf(counting.mode).status(counting, status);
  EXPECT_EQ(status["lease"]["ttl_ms"], 2000);

  Result<config::Config> foreign =
      WithRule("{name: r, key: ip, capacity: 100, period: 1s, sync_interval: 1s}");
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.status().message().find("sync_interval: needs counting: synced"),
            std::string::npos)
      << foreign.status().message();

  Result<config::Config> unknown =
      WithRule("{name: r, key: ip, capacity: 100, period: 1s, counting: local}");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("shared | synced | leased"), std::string::npos)
      << unknown.status().message();
}

}  // namespace
}  // namespace sluice::stores
