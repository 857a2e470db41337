#include "http/metrics.h"

#include <gtest/gtest.h>

namespace sluice::http {
namespace {

// envoyproxy/ratelimit's arithmetic (base_limiter.go), limit 10 and ratio 0.8: threshold 8.
TEST(MetricsTest, CountUsageWithinTheLimitCountsOnlyTheHitsPastTheThreshold) {
  EXPECT_EQ(CountUsage(10, 0.8, 0, 1).within, 1u);
  EXPECT_EQ(CountUsage(10, 0.8, 0, 1).near, 0u);
  EXPECT_EQ(CountUsage(10, 0.8, 7, 1).near, 0u);  // 8 used: at the threshold, not past it
  EXPECT_EQ(CountUsage(10, 0.8, 8, 1).near, 1u);
  EXPECT_EQ(CountUsage(10, 0.8, 6, 4).near, 2u);  // 7 to 10: the 9th and 10th
  EXPECT_EQ(CountUsage(10, 0.8, 6, 4).within, 4u);
  EXPECT_EQ(CountUsage(10, 0.8, 9, 1).over, 0u);
}

TEST(MetricsTest, CountUsageOverTheLimitCountsTheHitsPastItAndTheNearOnesItUsed) {
  const LimitUsage from_15 = CountUsage(20, 0.8, 15, 7);  // threshold 16; 16 to 22
  EXPECT_EQ(from_15.over, 2u);
  EXPECT_EQ(from_15.near, 4u);
  EXPECT_EQ(from_15.within, 0u);
  const LimitUsage from_18 = CountUsage(20, 0.8, 18, 5);
  EXPECT_EQ(from_18.over, 3u);
  EXPECT_EQ(from_18.near, 2u);
  const LimitUsage already_over = CountUsage(20, 0.8, 20, 3);
  EXPECT_EQ(already_over.over, 3u);
  EXPECT_EQ(already_over.near, 0u);
  EXPECT_EQ(CountUsage(0, 0.8, 0, 2).over, 2u);    // a limit of 0
  EXPECT_EQ(CountUsage(10, 0.8, 12, 0).over, 0u);  // a look counts nothing
}

TEST(MetricsTest, LabelValuesAreEscaped) {
  EXPECT_EQ(LabelValue(R"(a"b\c)"), R"(a\"b\\c)");
  EXPECT_EQ(LabelValue("a\nb"), R"(a\nb)");
}

TEST(MetricsTest, TheSameNodeOnSeveralLoopsIsOneSeriesUpOnlyWhenEveryConnectionIs) {
  Metrics metrics;
  LatencyHistogram a;
  a.Observe(0.001);
  LatencyHistogram b;
  b.Observe(0.2);
  const std::string text = metrics.Render(
      {}, {{"10.0.0.1:6379", true, a.Counts()}, {"10.0.0.1:6379", false, b.Counts()}});
  EXPECT_NE(text.find("sluice_store_up{node=\"10.0.0.1:6379\"} 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("sluice_store_round_trip_duration_seconds_count{node=\"10.0.0.1:6379\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("sluice_store_round_trip_duration_seconds_bucket{node=\"10.0.0.1:6379\","
                      "le=\"0.001\"} 1\n"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace sluice::http
