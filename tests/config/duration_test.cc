#include "config/duration.h"

#include <gtest/gtest.h>

namespace sluice::config {
namespace {

TEST(DurationTest, Units) {
  EXPECT_EQ(*ParseDurationMs("500ms"), 500);
  EXPECT_EQ(*ParseDurationMs("250"), 250);
  EXPECT_EQ(*ParseDurationMs("1s"), 1'000);
  EXPECT_EQ(*ParseDurationMs("1m"), 60'000);
  EXPECT_EQ(*ParseDurationMs("1h"), 3'600'000);
  EXPECT_EQ(*ParseDurationMs("1d"), 86'400'000);
}

TEST(DurationTest, RefusesJunk) {
  for (const char* bad :
       {"", "m", "-1s", "1.5s", "1 s", "1w", "99999999999999999999s", "9999999999999999d"}) {
    EXPECT_FALSE(ParseDurationMs(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace sluice::config
