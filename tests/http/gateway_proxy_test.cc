// The gateway's reverse proxy, driven in-process on the memory store: what it decides before any
// upstream is asked (refusals, shadow rules, overrides, bad attributes).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "http/gateway_harness.h"

namespace sluice::http {
namespace {

using json = nlohmann::json;
using testing::Header;
using testing::InProcessGateway;
using testing::MakeRequest;
using verb = beast::http::verb;

TEST(GatewayProxyTest, ARejectionIs429WithRetryAfterAndRateLimitHeadersBeforeAnyUpstream) {
  InProcessGateway gateway("rules:\n  - {name: per-key, key: key, capacity: 1, period: 1h}\n");
  // The one token goes through the check API, which shares the proxy's limiter.
  ASSERT_EQ(gateway.Check(R"({"attributes": {"key": "ak_1"}})").result_int(), 200);
  HttpRequest request = MakeRequest(verb::get, "/api/x?secret=1", {{"X-Api-Key", "ak_1"}});
  request.version(10);
  const HttpResponse r = gateway.Proxy(std::move(request));
  EXPECT_EQ(r.result_int(), 429);
  EXPECT_EQ(r.version(), 10u) << "answered in the client's version";
  EXPECT_EQ(Header(r, "Content-Type"), "application/json");
  // An hour for a token, rounded up: the doubles make 1 / (1 / 3,600,000 ms) a hair over
  // 3,600,000, hence 3,600,001 ms and 3601 s.
  EXPECT_EQ(Header(r, "Retry-After"), "3601");
  EXPECT_EQ(Header(r, "RateLimit"), "\"per-key\";r=0;t=3601");
  EXPECT_EQ(Header(r, "RateLimit-Policy"), "\"per-key\";q=1;w=3600");
  EXPECT_EQ(Header(r, "X-RateLimit-Limit"), "1");
  EXPECT_EQ(Header(r, "X-RateLimit-Remaining"), "0");
  const json body = json::parse(r.body());
  EXPECT_EQ(body["error"], "too many requests");
  EXPECT_EQ(body["rule"], "per-key");
  EXPECT_EQ(body["retry_after"], 3601);
  EXPECT_EQ(body["retry_ms"], 3'600'001);
  const std::string metrics = gateway.AdminGet("/metrics").body();
  EXPECT_NE(metrics.find("sluice_requests_total{decision=\"rejected\"} 1"), std::string::npos)
      << metrics;
}

TEST(GatewayProxyTest, AttributesThatCannotBeKeysAre400WithoutHeaders) {
  InProcessGateway gateway("rules:\n  - {name: per-key, key: key, capacity: 1, period: 1h}\n");
  const HttpResponse r =
      gateway.Proxy(MakeRequest(verb::get, "/", {{"X-Api-Key", std::string(5000, 'k')}}));
  EXPECT_EQ(r.result_int(), 400) << r.body();
  EXPECT_TRUE(json::accept(r.body())) << r.body();
  EXPECT_EQ(Header(r, "RateLimit"), "");
}

TEST(GatewayProxyTest, ShadowRulesCountButNeverRejectAndOverridesGiveTheirOwnLimit) {
  InProcessGateway gateway(
      "rules:\n"
      "  - {name: shadow-ip, key: ip, capacity: 1, period: 1h, shadow: true}\n"
      "  - {name: per-key, key: key, capacity: 1, period: 1h,\n"
      "     overrides: {ak_big: {capacity: 3}}}\n");
  // What nginx's form lets through, the proxy would forward: the same decision.
  auto status = [&](const std::string& key) {
    return gateway.Auth("GET", "/", {{"X-Api-Key", key}}).result_int();
  };
  for (int i = 0; i < 3; ++i) EXPECT_EQ(status("ak_big"), 200);
  EXPECT_EQ(gateway.Proxy(MakeRequest(verb::get, "/", {{"X-Api-Key", "ak_big"}})).result_int(),
            429);
  EXPECT_EQ(status("ak_small"), 200);
  EXPECT_EQ(gateway.Proxy(MakeRequest(verb::get, "/", {{"X-Api-Key", "ak_small"}})).result_int(),
            429);
  const std::string metrics = gateway.AdminGet("/metrics").body();
  EXPECT_NE(metrics.find("sluice_shadow_rejections_total{rule=\"shadow-ip\"} 5"), std::string::npos)
      << metrics;
  // The check API shows the shadow rule's verdict, which rejected, beside the allowing one.
  const json doc =
      json::parse(gateway.Check(R"({"attributes": {"key": "k", "ip": "127.0.0.1"}})").body());
  EXPECT_TRUE(doc["allowed"].get<bool>());
  ASSERT_EQ(doc["rules"].size(), 2u);
  EXPECT_TRUE(doc["rules"][0]["shadow"].get<bool>());
  EXPECT_FALSE(doc["rules"][0]["allowed"].get<bool>());
}

}  // namespace
}  // namespace sluice::http
