#include "config/schema.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>

namespace sluice::config {
namespace {

// A configuration with `store` as its store section and `rest` after its rules.
Config Parsed(const std::string& store, const std::string& rest = "") {
  Result<Config> config =
      ParseConfig("upstream: {address: 127.0.0.1:9000}\nstore: " + store +
                      "\nrules: [{name: per-key, key: key, capacity: 5, period: 1h}]\n" + rest,
                  "test.yaml");
  EXPECT_TRUE(config.ok()) << config.status().message();
  return config.ok() ? std::move(config).value() : Config{};
}

bool Has(const std::vector<std::string_view>& keys, std::string_view key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

TEST(SchemaTest, EveryFieldThatNeedsARestartIsCompared) {
  for (const SchemaField& field : Schema()) {
    if (field.on_reload != OnReload::kRestart) continue;
    EXPECT_TRUE(field.same != nullptr || ComparedByText(field)) << field.path;
  }
}

TEST(SchemaTest, TheKeysOfASectionAreTheFirstStepsBelowIt) {
  EXPECT_TRUE(Has(KeysOf(""), "store"));
  EXPECT_TRUE(Has(KeysOf(""), "quota_store"));
  EXPECT_FALSE(Has(KeysOf(""), "url"));
  EXPECT_TRUE(Has(KeysOf("store"), "url"));
  EXPECT_TRUE(Has(KeysOf("store"), "tls"));
  EXPECT_FALSE(Has(KeysOf("store"), "ca_file"));
  EXPECT_TRUE(Has(KeysOf("store.tls"), "ca_file"));
  EXPECT_TRUE(Has(KeysOf("rls.keepalive"), "max_connection_age_grace"));
  EXPECT_TRUE(Has(KeysOf(""), "rules"));
  EXPECT_TRUE(Has(KeysOf("rules[]"), "capacity"));
  EXPECT_TRUE(Has(KeysOf("rules[].overrides.*"), "period"));
  EXPECT_FALSE(Has(KeysOf("rules[]"), "max_fraction"));
  EXPECT_TRUE(KeysOf("no_such_section").empty());
}

TEST(SchemaTest, AReloadIsRefusedForTheStoreFieldThatChanged) {
  const Config running = Parsed("{type: redis, url: 'redis://127.0.0.1:6379', timeout: 1s}");
  EXPECT_EQ(FirstRestartField(running, running), std::nullopt);
  EXPECT_EQ(FirstRestartField(running,
                              Parsed("{type: redis, url: 'redis://127.0.0.1:6380', timeout: 1s}")),
            "store.url");
  EXPECT_EQ(FirstRestartField(running,
                              Parsed("{type: redis, url: 'redis://127.0.0.1:6379', timeout: 2s}")),
            "store.timeout");
  EXPECT_EQ(FirstRestartField(running, Parsed("{type: memory}")), "store.type");
}

TEST(SchemaTest, TheSameStoreWrittenOtherwiseReloads) {
  const Config running = Parsed("{type: redis, url: 'redis://127.0.0.1:6379', timeout: 1s}");
  EXPECT_EQ(FirstRestartField(
                running, Parsed("{type: redis, url: 'redis://127.0.0.1:6379', timeout: 1000ms}")),
            std::nullopt);
  EXPECT_EQ(FirstRestartField(Parsed("{}"), Parsed("{type: memory}")), std::nullopt);
}

TEST(SchemaTest, FieldsThatReloadAreNeverAReasonToRefuse) {
  const Config running = Parsed("{type: memory}");
  Config next = Parsed("{type: memory}", "failure: closed\nkey_prefix: 'other:'\n");
  next.rules.clear();
  EXPECT_EQ(FirstRestartField(running, next), std::nullopt);
}

TEST(SchemaTest, AQuotaStoreAddedOrChangedIsRefusedByItsField) {
  const std::string quota =
      "quota_store: {type: postgres, url: 'postgresql://sluice@127.0.0.1:5432/sluice'";
  const Config running = Parsed("{type: memory}", quota + "}\n");
  EXPECT_EQ(FirstRestartField(Parsed("{type: memory}"), running), "quota_store.type");
  EXPECT_EQ(FirstRestartField(running, Parsed("{type: memory}", quota + ", pool: 3}\n")),
            "quota_store.pool");
}

TEST(SchemaTest, AKeepaliveSettingIsRefusedByName) {
  const std::string rls = "rls: {json_listen: 127.0.0.1:9002, config: [/nonexistent]";
  const Config running = Parsed("{type: memory}", rls + "}\n");
  EXPECT_EQ(
      FirstRestartField(running, Parsed("{type: memory}", rls + ", keepalive: {time: 2m}}\n")),
      "rls.keepalive.time");
}

}  // namespace
}  // namespace sluice::config
