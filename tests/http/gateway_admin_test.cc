// The gateway's admin endpoints, driven in-process on the memory store: health, readiness,
// metrics, the status page and its data, and /debug/top.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>

#include "http/gateway_harness.h"

namespace sluice::http {
namespace {

using json = nlohmann::json;
using testing::Header;
using testing::InProcessGateway;
using testing::MakeRequest;
using verb = beast::http::verb;

std::string KeyBody(const std::string& key) {
  return json{{"attributes", {{"key", key}, {"ip", "198.51.100.7"}}}}.dump();
}

const char* kRules =
    "rules:\n"
    "  - {name: per-ip, key: ip, capacity: 1000000, period: 1h}\n"
    "  - {name: per-key, key: key, capacity: 1, tokens: 1, period: 1h}\n";

TEST(GatewayAdminTest, HealthReadinessAndMetrics) {
  std::atomic<bool> store_up{true};
  InProcessGateway gateway(kRules, [&] { return store_up.load(); });
  HttpResponse r = gateway.AdminGet("/healthz");
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(r.body(), "ok\n");
  r = gateway.AdminGet("/readyz");
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(r.body(), "ready\n");
  store_up = false;
  r = gateway.AdminGet("/readyz");
  EXPECT_EQ(r.result_int(), 503);
  EXPECT_EQ(r.body(), "store unreachable\n");
  EXPECT_EQ(gateway.AdminGet("/healthz").result_int(), 200) << "alive whatever the store";

  gateway.Check(KeyBody("ak_1"));
  gateway.Check(KeyBody("ak_1"));
  gateway.gateway().SetGauges([] {
    return std::vector<GaugeValue>{{"sluice_test_gauge", "A test.", 7}};
  });
  gateway.gateway().SetMoreMetrics([] { return std::string("# from another front end\n"); });
  r = gateway.AdminGet("/metrics");
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(Header(r, "Content-Type"), "text/plain; version=0.0.4");
  for (const char* series : {R"(sluice_requests_total{decision="allowed"} 1)",
                             R"(sluice_requests_total{decision="rejected"} 1)",
                             R"(sluice_checks_total{rule="per-key",outcome="rejected"} 1)",
                             "sluice_test_gauge 7", "# from another front end"}) {
    EXPECT_NE(r.body().find(series), std::string::npos) << series << " in\n" << r.body();
  }
  EXPECT_EQ(gateway.AdminGet("/nowhere").result_int(), 404);
}

TEST(GatewayAdminTest, AdminEndpointsRefuseMalformedQueryStrings) {
  InProcessGateway gateway(kRules);
  EXPECT_EQ(gateway.AdminGet("/metrics?%zz").result_int(), 400);
  EXPECT_EQ(gateway.AdminGet("/healthz?a=%4").result_int(), 400);
  EXPECT_EQ(gateway.AdminGet("/metrics?name=%41").result_int(), 200);
  EXPECT_EQ(gateway.AdminGet("/nowhere?x=1").result_int(), 404);
}

TEST(GatewayAdminTest, MalformedQueriesAndMethodsAreRefused) {
  InProcessGateway gateway(kRules);
  for (const char* target :
       {"/debug/top?n=abc", "/debug/top?n=0", "/debug/top?n=%zz", "/debug/top?bogus=1",
        "/debug/top?name=a&name=b", "/debug/top?name=%0d%0a", "/status.json?seconds=0",
        "/status.json?seconds=1x", "/status.json?seconds=%", "/?x=1", "/?&"}) {
    const HttpResponse r = gateway.AdminGet(target);
    EXPECT_EQ(r.result_int(), 400) << target << ": " << r.body();
    EXPECT_TRUE(json::accept(r.body())) << r.body();
  }
  const std::string long_query = "/debug/top?name=" + std::string(4'000, 'a');
  EXPECT_EQ(gateway.AdminGet(long_query).result_int(), 400);
  EXPECT_EQ(gateway.Admin(MakeRequest(verb::post, "/debug/top")).result_int(), 405);
  for (const char* target : {"/", "/status.json", "/status.json?seconds=60", "/debug/top?n=1"}) {
    EXPECT_EQ(gateway.AdminGet(target).result_int(), 200) << target;
  }
  EXPECT_EQ(gateway.AdminGet("/healthz").result_int(), 200);  // the others unchanged
}

TEST(GatewayAdminTest, DebugTopRanksTheHeavyHitterMaskedUnderAFloodOfDistinctKeys) {
  InProcessGateway gateway(std::string("debug_top: {size: 10}\n") + kRules);
  const std::string heavy = "ak_live_heavy_hitter_0042";
  int rejected = 0;
  auto check = [&](const std::string& key) {
    rejected += gateway.Check(KeyBody(key)).result_int() == 429 ? 1 : 0;
  };
  for (int i = 0; i < 301; ++i) check(heavy);
  // 5,000 distinct keys, each rejected once (the first of two allowed): far more than kept.
  for (int i = 0; i < 5'000; ++i) {
    check("ak_flood_" + std::to_string(i));
    check("ak_flood_" + std::to_string(i));
  }
  EXPECT_EQ(rejected, 300 + 5'000);

  const auto start = std::chrono::steady_clock::now();
  const HttpResponse top = gateway.AdminGet("/debug/top");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  ASSERT_EQ(top.result_int(), 200) << top.body();
  EXPECT_EQ(Header(top, "Content-Type"), "application/json");
  EXPECT_EQ(top.body().find(heavy), std::string::npos) << "an API key shown whole";
  const json doc = json::parse(top.body());
  const json& per_key = doc["rules"]["per-key"];
  ASSERT_EQ(per_key.size(), 10u);  // the configured size, however many clients
  EXPECT_TRUE(per_key[0]["value"].get<std::string>().starts_with("ak_liv…"));
  EXPECT_GE(per_key[0]["rejected"].get<int>(), 300);
  EXPECT_LE(per_key[0]["rejected"].get<int>() - per_key[0]["error"].get<int>(), 300);
  EXPECT_LT(per_key[1]["rejected"].get<int>(), 300);
  EXPECT_TRUE(doc["rules"]["per-ip"].empty());  // it never rejected
  EXPECT_TRUE(doc["limits"].empty());

  const json one = json::parse(gateway.AdminGet("/debug/top?name=per-key&n=3").body());
  EXPECT_EQ(one["rules"].size(), 1u);
  EXPECT_EQ(one["rules"]["per-key"].size(), 3u);
}

TEST(GatewayAdminTest, RevealKeysShowsThemWholeAndAddressesAreAlwaysWhole) {
  InProcessGateway gateway(
      "debug_top: {size: 5, reveal_keys: true}\n"
      "rules:\n"
      "  - {name: per-ip, key: ip, capacity: 1, period: 1h}\n"
      "  - {name: per-key, key: key, capacity: 1, period: 1h}\n");
  for (int i = 0; i < 3; ++i) gateway.Auth("GET", "/", {{"X-Api-Key", "ak_revealed_123456"}});
  const json doc = json::parse(gateway.AdminGet("/debug/top").body());
  EXPECT_EQ(doc["rules"]["per-key"][0]["value"], "ak_revealed_123456");
  EXPECT_EQ(doc["rules"]["per-ip"][0]["value"], "127.0.0.1");
  EXPECT_EQ(doc["rules"]["per-ip"][0]["rejected"], 2);
}

// The page and its data show the configuration in force: its store's password and its tenants'
// keys never. (The configuration names a Redis store, but the page reads only the configuration:
// the gateway runs on the memory store, told the store is unreachable.)
TEST(GatewayAdminTest, NoSecretOnThePageOrItsJson) {
  InProcessGateway gateway(
      "store: {type: redis, url: 'redis://app:hunter2-store-pass@127.0.0.1:9', timeout: 50ms}\n"
      "tenants: {ak_tenant_secret_9999: org_acme}\n" +
          std::string(kRules),
      [] { return false; });
  for (const char* target : {"/", "/status.json", "/debug/top"}) {
    const HttpResponse r = gateway.AdminGet(target);
    ASSERT_EQ(r.result_int(), 200) << target;
    for (const char* secret : {"hunter2-store-pass", "ak_tenant_secret_9999"}) {
      EXPECT_EQ(r.body().find(secret), std::string::npos) << secret << " in " << target;
    }
  }
  const json status = json::parse(gateway.AdminGet("/status.json").body());
  EXPECT_FALSE(status["ready"].get<bool>());
  EXPECT_EQ(status["store"]["password"], "(set)");
  EXPECT_EQ(status["config"]["tenants"].begin().value(), "org_acme");
}

TEST(GatewayAdminTest, TheStatusJsonChartsTheSampledCounts) {
  InProcessGateway gateway(kRules);
  gateway.Check(KeyBody("ak_1"));
  gateway.Check(KeyBody("ak_1"));
  gateway.gateway().SampleStatus();
  const HttpResponse r = gateway.AdminGet("/status.json?seconds=60");
  ASSERT_EQ(r.result_int(), 200);
  EXPECT_EQ(Header(r, "Cache-Control"), "no-store");
  const json status = json::parse(r.body());
  EXPECT_TRUE(status["ready"].get<bool>());
  EXPECT_NE(r.body().find("per-key"), std::string::npos) << r.body();
  const HttpResponse page = gateway.AdminGet("/");
  EXPECT_EQ(Header(page, "Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(Header(page, "Cache-Control"), "no-store");
}

}  // namespace
}  // namespace sluice::http
