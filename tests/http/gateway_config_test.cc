// The gateway's configuration in force and its reload, driven in-process on the memory store.
#include "http/gateway_config.h"

#include <gtest/gtest.h>

#include "http/gateway_harness.h"

namespace sluice::http {
namespace {

using testing::ConfigOf;
using testing::InProcessGateway;

const char* kOneAnHour = "rules:\n  - {name: per-key, key: key, capacity: 1, period: 1h}\n";
const char* kThreeAnHour = "rules:\n  - {name: per-key, key: key, capacity: 3, period: 1h}\n";

int CheckStatus(InProcessGateway& gateway, const std::string& key) {
  return static_cast<int>(
      gateway.Check(R"({"attributes": {"key": ")" + key + R"("}})").result_int());
}

TEST(GatewayConfigTest, AReloadPutsAGoodConfigurationInForceAndKeepsTheOldOneOnABadOne) {
  InProcessGateway gateway(kOneAnHour);
  EXPECT_EQ(CheckStatus(gateway, "k"), 200);
  EXPECT_EQ(CheckStatus(gateway, "k"), 429);
  const std::shared_ptr<const Snapshot> before = gateway.gateway().Current();
  ASSERT_TRUE(gateway.Reconfigure(kThreeAnHour).ok());
  EXPECT_NE(gateway.gateway().Current(), before);
  EXPECT_EQ(gateway.gateway().Current()->rules()[0].limit.capacity, 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(CheckStatus(gateway, "fresh"), 200);
  EXPECT_EQ(CheckStatus(gateway, "fresh"), 429);

  // A configuration the limiter cannot take (a durable rule and no quota store) changes nothing.
  const std::shared_ptr<const Snapshot> good = gateway.gateway().Current();
  const Status bad = gateway.Reconfigure(
      "rules:\n  - {name: q, key: tenant, capacity: 5, period: month, durable: true}\n");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("quota"), std::string::npos) << bad.message();
  EXPECT_EQ(gateway.gateway().Current(), good);
  EXPECT_EQ(CheckStatus(gateway, "other"), 200);
}

TEST(GatewayConfigTest, ARequestKeepsTheSnapshotItStartedWith) {
  Metrics metrics;
  TopRejected top_rejected;
  GatewayConfig config({std::make_shared<MemoryStore>()}, nullptr, metrics, top_rejected);
  EXPECT_EQ(config.Current(), nullptr);
  ASSERT_TRUE(config.Reconfigure(ConfigOf(kOneAnHour).value()).ok());
  const std::shared_ptr<const Snapshot> held = config.Current();
  ASSERT_TRUE(config.Reconfigure(ConfigOf(kThreeAnHour).value()).ok());
  EXPECT_EQ(held->rules()[0].limit.capacity, 1);
  EXPECT_EQ(config.Current()->rules()[0].limit.capacity, 3);
  // A rule's counters and rejected values outlive the snapshot: the same ones, by name.
  EXPECT_EQ(held->rule_counters[0], config.Current()->rule_counters[0]);
  EXPECT_EQ(held->rejected_values[0], config.Current()->rejected_values[0]);
  EXPECT_EQ(held->upstream_authority, "127.0.0.1:9");
  EXPECT_FALSE(held->reports_costs);
  EXPECT_EQ(held->local_counts, nullptr);
}

}  // namespace
}  // namespace sluice::http
