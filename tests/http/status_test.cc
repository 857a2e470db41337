#include "http/status.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace sluice::http {
namespace {

using json = nlohmann::json;

TEST(RejectedValuesTest, MaskedValuesAreRecognisableButNeverWhole) {
  const std::string masked = MaskedValue("ak_live_0123456789abcdef");
  EXPECT_TRUE(masked.starts_with("ak_liv…")) << masked;
  EXPECT_EQ(masked.size(), std::string("ak_liv…").size() + 6);
  EXPECT_EQ(masked, MaskedValue("ak_live_0123456789abcdef"));  // stable
  EXPECT_NE(masked, MaskedValue("ak_live_0123456789abcdeg"));  // the hash tells them apart
  // A short value shows at most half of itself; a multi-byte character is never cut in two.
  EXPECT_TRUE(MaskedValue("abcd").starts_with("ab…"));
  EXPECT_TRUE(MaskedValue("x").starts_with("…"));
  EXPECT_TRUE(MaskedValue("ééééééééééééé").starts_with("éééééé…"));
}

TEST(RejectedValuesTest, ShownByKind) {
  EXPECT_EQ(ShownValue("203.0.113.7", ValueKind::kPlain, false), "203.0.113.7");
  EXPECT_EQ(ShownValue("ak_live_secret_1", ValueKind::kSecret, true), "ak_live_secret_1");
  EXPECT_EQ(ShownValue("ak_live_secret_1", ValueKind::kSecret, false),
            MaskedValue("ak_live_secret_1"));
  const std::string value = DescriptorValue({{"api_key", "sk_9876543210"}, {"path", "/v1"}});
  EXPECT_EQ(ShownValue(value, ValueKind::kDescriptor, true), "api_key=sk_9876543210, path=/v1");
  EXPECT_EQ(ShownValue(value, ValueKind::kDescriptor, false),
            "api_key=" + MaskedValue("sk_9876543210") + ", path=" + MaskedValue("/v1"));
}

TEST(RejectedValuesTest, TopRejectedIsBoundedAndResizes) {
  TopRejected top(2);
  RejectedValues* rule = top.ForRule("per-key");
  EXPECT_EQ(rule, top.ForRule("per-key"));
  for (int i = 0; i < 10'000; ++i) rule->Record("k" + std::to_string(i), 1'000);
  for (int i = 0; i < 3'000; ++i) rule->Record("hot", 1'000);
  const std::vector<HeavyHitter> shown = rule->Top(1'000);
  ASSERT_EQ(shown.size(), 2u);
  EXPECT_EQ(shown.front().value, "hot");
  EXPECT_EQ(rule->Total(1'000), 13'000u);
  top.Resize(0);  // off: nothing recorded, nothing shown
  rule->Record("hot", 1'000);
  EXPECT_TRUE(rule->Top(1'000).empty());
  for (size_t i = 0; i < TopRejected::kMaxLimits; ++i) {
    ASSERT_NE(top.ForLimit("d/" + std::to_string(i)), nullptr);
  }
  EXPECT_EQ(top.ForLimit("d/one-too-many"), nullptr);
  EXPECT_NE(top.ForLimit("d/0"), nullptr);
}

TEST(QueryTest, ParsesAndRefusesWhatIsMalformed) {
  auto ok = ParseQuery("name=per%2Dkey&n=5", {"name", "n"});
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->at("name"), "per-key");
  EXPECT_EQ(ok->at("n"), "5");
  EXPECT_TRUE(ParseQuery("", {}).ok());
  EXPECT_EQ(ParseQuery("name=a+b", {"name"})->at("name"), "a b");
  for (const char* bad : {"n=%", "n=%4", "n=%zz", "x=1", "n=1&n=2", "=1", "n=%0a", "&"}) {
    EXPECT_FALSE(ParseQuery(bad, {"name", "n"}).ok()) << bad;
  }
  EXPECT_FALSE(ParseQuery("anything", {}).ok());
}

config::Config Parsed(const std::string& yaml) {
  Result<config::Config> c = config::ParseConfig(yaml, "c");
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? *c : config::Config{};
}

TEST(StatusTest, TheConfigurationHasNoSecrets) {
  const config::Config c = Parsed(
      "upstream: {address: 127.0.0.1:9000}\n"
      "store: {type: redis, url: 'redis://app:pw-in-url-1234@127.0.0.1:6379/2'}\n"
      "tenants: {ak_tenant_key_000111: org_acme}\n"
      "rules:\n"
      "  - {name: per-key, key: key, capacity: 10, period: 1m,\n"
      "     overrides: {ak_override_key_222: {capacity: 100}}}\n"
      "  - {name: per-ip, key: ip, capacity: 10, period: 1s, overrides: {10.0.0.1: {capacity: "
      "5}}}\n");
  const std::string text = ConfigJson(c);
  for (const char* secret : {"pw-in-url-1234", "ak_tenant_key_000111", "ak_override_key_222"}) {
    EXPECT_EQ(text.find(secret), std::string::npos) << secret << " in " << text;
  }
  const json doc = json::parse(text);
  EXPECT_EQ(doc["store"]["password"], "(set)");
  EXPECT_EQ(doc["store"]["address"], "redis 127.0.0.1:6379");
  EXPECT_EQ(doc["tenants"][MaskedValue("ak_tenant_key_000111")], "org_acme");
  EXPECT_TRUE(doc["rules"][0]["overrides"].contains(MaskedValue("ak_override_key_222")));
  EXPECT_TRUE(doc["rules"][1]["overrides"].contains("10.0.0.1"));  // an address, shown whole

  config::Config revealed = c;
  revealed.debug_top.reveal_keys = true;
  const std::string shown = ConfigJson(revealed);
  EXPECT_NE(shown.find("ak_tenant_key_000111"), std::string::npos);
  EXPECT_EQ(shown.find("pw-in-url-1234"), std::string::npos);  // a password, never
}

TEST(StatusTest, DebugTopMasksKeysAndShowsAddresses) {
  const config::Config c = Parsed(
      "upstream: {address: 127.0.0.1:9000}\n"
      "rules:\n"
      "  - {name: per-key, key: key, capacity: 10, period: 1m}\n"
      "  - {name: per-ip, key: ip, capacity: 10, period: 1s}\n"
      "  - {name: per-client, key: 'header:X-Client', capacity: 10, period: 1s}\n");
  TopRejected top(5);
  RejectedValues* keys = top.ForRule("per-key");
  RejectedValues* ips = top.ForRule("per-ip");
  RejectedValues* clients = top.ForRule("per-client");
  for (int i = 0; i < 3; ++i) keys->Record("ak_live_abcdef123456", 10);
  keys->Record("ak_other_999999999", 10);
  ips->Record("203.0.113.9", 10);
  clients->Record("\xff\xfe not utf-8 at all", 10);  // a header may carry anything
  top.ForLimit("edge/per_user")->Record(DescriptorValue({{"user", "u_secret_777777"}}), 10);
  const StatusView view{&c, {keys, ips, clients}, top.Limits(), 20};
  const std::string text = DebugTopJson(view, std::nullopt, 20);
  EXPECT_EQ(text.find("ak_live_abcdef123456"), std::string::npos);
  EXPECT_EQ(text.find("u_secret_777777"), std::string::npos);
  const json doc = json::parse(text);
  ASSERT_EQ(doc["rules"]["per-key"].size(), 2u);
  EXPECT_EQ(doc["rules"]["per-key"][0]["value"], MaskedValue("ak_live_abcdef123456"));
  EXPECT_EQ(doc["rules"]["per-key"][0]["rejected"], 3);
  EXPECT_EQ(doc["rules"]["per-key"][0]["error"], 0);
  EXPECT_EQ(doc["rules"]["per-ip"][0]["value"], "203.0.113.9");
  EXPECT_EQ(doc["rules"]["per-client"].size(), 1u);
  EXPECT_EQ(doc["limits"]["edge/per_user"][0]["value"], "user=" + MaskedValue("u_secret_777777"));

  const json one = json::parse(DebugTopJson(view, "per-ip", 1));
  EXPECT_EQ(one["rules"].size(), 1u);
  EXPECT_TRUE(one["limits"].empty());
}

TEST(StatusHistoryTest, RatesAndRecentLatency) {
  StatusHistory history(3);
  auto sample = [](int64_t second, uint64_t allowed, uint64_t rejected, uint64_t fast,
                   uint64_t slow) {
    CounterSample s;
    s.second = second;
    s.rules = {{"per-key", {allowed, rejected}}};
    s.check_latency.buckets[0] = fast;  // <= 100 us
    s.check_latency.buckets[6] = slow;  // <= 10 ms
    s.check_latency.count = fast + slow;
    s.check_latency.sum_seconds = static_cast<double>(fast * 50 + slow * 8'000) / 1e6;
    return s;
  };
  history.Add(sample(100, 0, 0, 0, 0));
  history.Add(sample(101, 10, 0, 10, 0));
  history.Add(sample(103, 30, 8, 30, 8));  // two seconds later
  std::vector<RatePoint> rates = history.Rates("per-key");
  ASSERT_EQ(rates.size(), 2u);
  EXPECT_EQ(rates[0].allowed, 10);
  EXPECT_EQ(rates[1].allowed, 10);
  EXPECT_EQ(rates[1].rejected, 4);
  EXPECT_TRUE(history.Rates("no-such-rule").size() == 2 &&
              history.Rates("no-such-rule")[1].allowed == 0);
  const RecentLatency recent = history.Recent(60);
  EXPECT_EQ(recent.checks, 38u);
  EXPECT_DOUBLE_EQ(recent.p50_s, 0.0001);
  EXPECT_DOUBLE_EQ(recent.p99_s, 0.01);
  history.Add(sample(104, 30, 8, 30, 8));
  history.Add(sample(105, 30, 8, 30, 8));
  EXPECT_EQ(history.size(), 4u);         // three seconds and one more kept
  history.Add(sample(104, 0, 0, 0, 0));  // from the past: dropped
  EXPECT_EQ(history.Rates("per-key").back().allowed, 0);
}

}  // namespace
}  // namespace sluice::http
