// The gateway's check API and nginx's auth_request form, driven in-process on the memory store.
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

TEST(GatewayCheckApiTest, CheckApiAnswersJsonAndTheAuthRequestForm) {
  InProcessGateway gateway(
      "client: {trusted_proxies: [127.0.0.1/32]}\n"
      "rules:\n  - {name: per-key, key: key, capacity: 1, period: 1h,\n"
      "     match: {methods: [GET], path_prefix: /api/}}\n");
  const std::string body = R"({"attributes": {"key": "ak_1"}, "method": "GET", "path": "/api/x"})";
  HttpResponse r = gateway.Check(body);
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_NE(r.body().find("\"allowed\":true"), std::string::npos);
  r = gateway.Check(body);
  EXPECT_EQ(r.result_int(), 429);
  EXPECT_NE(r.body().find("\"rejected_by\":\"per-key\""), std::string::npos);
  EXPECT_EQ(gateway.Check("{not json").result_int(), 400);
  EXPECT_EQ(gateway.Check(R"({"attributes": {"key": 5}})").result_int(), 400);
  // nginx auth_request: the original method and URI in headers.
  auto auth = [&](const std::string& uri) {
    return gateway.Auth("GET", uri, {{"X-Api-Key", "ak_2"}}).result_int();
  };
  EXPECT_EQ(auth("/api/y?q=1"), 200);
  EXPECT_EQ(auth("/api/y"), 429);
  EXPECT_EQ(auth("/static/app.js"), 200);  // outside the rule's route
}

TEST(GatewayCheckApiTest, ARejectionSaysWhoRejectedWithHeadersAndBody) {
  InProcessGateway gateway("rules:\n  - {name: per-key, key: key, capacity: 2, period: 1m}\n");
  const std::string body = R"({"attributes": {"key": "ak_1"}})";
  HttpResponse r = gateway.Check(body);
  ASSERT_EQ(r.result_int(), 200);
  EXPECT_EQ(Header(r, "RateLimit"), "\"per-key\";r=1;t=30");
  EXPECT_EQ(Header(r, "RateLimit-Policy"), "\"per-key\";q=2;w=60");
  EXPECT_EQ(Header(r, "Retry-After"), "");
  gateway.Check(body);
  r = gateway.Check(body);
  ASSERT_EQ(r.result_int(), 429);
  EXPECT_EQ(Header(r, "Content-Type"), "application/json");
  EXPECT_EQ(Header(r, "Retry-After"), "30");
  EXPECT_EQ(Header(r, "X-RateLimit-Remaining"), "0");
  const json doc = json::parse(r.body());
  EXPECT_FALSE(doc["allowed"].get<bool>());
  EXPECT_TRUE(doc["checked"].get<bool>());
  EXPECT_EQ(doc["rejected_by"], "per-key");
  EXPECT_EQ(doc["tightest"], "per-key");
  EXPECT_EQ(doc["retry_after"], 30);
  ASSERT_EQ(doc["rules"].size(), 1u);
  EXPECT_EQ(doc["rules"][0]["remaining"], 0);
  EXPECT_EQ(doc["rules"][0]["limit"], 2);
}

TEST(GatewayCheckApiTest, BadBodiesAndUnknownEndpointsAreRefusedAsJson) {
  InProcessGateway gateway("rules:\n  - {name: per-key, key: key, capacity: 5, period: 1m}\n");
  for (const char* body :
       {"", "[]", "{}", R"({"attributes": []})", R"({"attributes": {"key": "k"}, "method": 1})",
        R"({"attributes": {"key": "k"}, "cost": -1})",
        R"({"attributes": {"key": "k"}, "cost": 1.5})"}) {
    const HttpResponse r = gateway.Check(body);
    EXPECT_EQ(r.result_int(), 400) << body;
    EXPECT_TRUE(json::accept(r.body())) << r.body();
  }
  // An attribute no rule reads is no error; a request without the one the rule keys on is not
  // limited by it.
  EXPECT_EQ(gateway.Check(R"({"attributes": {"key": "k", "colour": "blue"}})").result_int(), 200);
  const HttpResponse unkeyed = gateway.Check(R"({"attributes": {"colour": "blue"}})");
  EXPECT_EQ(unkeyed.result_int(), 200) << unkeyed.body();
  EXPECT_EQ(gateway.CheckApi(MakeRequest(verb::get, "/v1/check")).result_int(), 405);
  EXPECT_EQ(gateway.CheckApi(MakeRequest(verb::get, "/v1/report")).result_int(), 405);
  const HttpResponse nowhere = gateway.CheckApi(MakeRequest(verb::post, "/v2/check", {}, "{}"));
  EXPECT_EQ(nowhere.result_int(), 404);
  EXPECT_TRUE(json::accept(nowhere.body()));
}

TEST(GatewayCheckApiTest, TheCheckApiLooksThenTakesAReport) {
  InProcessGateway gateway(
      "rules:\n  - {name: tokens, key: key, capacity: 1000, period: 1m,\n"
      "     cost_from: {response_header: X-Usage-Tokens}}\n");
  auto report = [&](const std::string& body) {
    return gateway.CheckApi(MakeRequest(verb::post, "/v1/report", {}, body));
  };
  const std::string attributes = R"("attributes": {"key": "ak_c"})";
  HttpResponse look = gateway.Check("{" + attributes + R"(, "cost": 0})");
  EXPECT_EQ(look.result_int(), 200);
  EXPECT_NE(look.body().find(R"("remaining":1000)"), std::string::npos) << look.body();
  HttpResponse charged = report("{" + attributes + R"(, "cost": 1500})");
  EXPECT_EQ(charged.result_int(), 200);  // never refused for being over: the work is done
  EXPECT_NE(charged.body().find(R"("remaining":0)"), std::string::npos) << charged.body();
  EXPECT_EQ(gateway.Check("{" + attributes + R"(, "cost": 0})").result_int(), 429);  // in debt
  // Bad input: a report needs a cost, a whole number in range.
  EXPECT_EQ(report("{" + attributes + "}").result_int(), 400);
  EXPECT_EQ(report("{" + attributes + R"(, "cost": -1})").result_int(), 400);
  EXPECT_EQ(report("{" + attributes + R"(, "cost": "ten"})").result_int(), 400);
  EXPECT_EQ(gateway.CheckApi(MakeRequest(verb::get, "/v1/report")).result_int(), 405);
}

TEST(GatewayCheckApiTest, TheAuthFormDeniesWith403WhenAskedAndHeadersSayWhatIsLeft) {
  InProcessGateway gateway("rules:\n  - {name: per-key, key: key, capacity: 1, period: 1h}\n");
  const testing::Headers key = {{"X-Api-Key", "ak_1"}};
  HttpResponse r = gateway.Auth("GET", "/", key, "/v1/auth?deny=403");
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_TRUE(r.body().empty());
  EXPECT_EQ(Header(r, "X-RateLimit-Remaining"), "0");
  r = gateway.Auth("GET", "/", key, "/v1/auth?deny=403");
  EXPECT_EQ(r.result_int(), 403);
  EXPECT_EQ(Header(r, "Retry-After"), "3601");  // an hour, and a hair of the doubles' making
  EXPECT_EQ(gateway.Auth("GET", "/", key).result_int(), 429);
}

TEST(GatewayCheckApiTest, ThreeRulesTightestInHeadersRejectingInBody) {
  InProcessGateway gateway(
      "client: {api_key_header: X-Api-Key, tenant_header: X-Tenant-Id}\n"
      "tenants: {ak_abc123: org_acme}\n"
      "rules:\n"
      "  - {name: per-ip, key: ip, capacity: 1000, period: 1m}\n"
      "  - {name: per-key, key: key, capacity: 100, period: 1m}\n"
      "  - {name: per-tenant, key: tenant, capacity: 3, period: 1h}\n");
  const testing::Headers key = {{"X-Api-Key", "ak_abc123"}};
  HttpResponse r = gateway.Auth("GET", "/", key);
  ASSERT_EQ(r.result_int(), 200);
  EXPECT_EQ(Header(r, "RateLimit"), "\"per-tenant\";r=2;t=1200");
  gateway.Auth("GET", "/", key);
  gateway.Auth("GET", "/", key);
  // The proxy refuses before any upstream, naming the rule in its body.
  r = gateway.Proxy(MakeRequest(verb::get, "/", key));
  EXPECT_EQ(r.result_int(), 429);
  EXPECT_NE(r.body().find("\"rule\":\"per-tenant\""), std::string::npos) << r.body();
  // Another key of another tenant (by header) is not affected.
  EXPECT_EQ(
      gateway.Auth("GET", "/", {{"X-Api-Key", "ak_other"}, {"X-Tenant-Id", "org_b"}}).result_int(),
      200);
}

TEST(GatewayCheckApiTest, ForwardedForIsBelievedOnlyFromTrustedProxies) {
  const std::string rules = "rules:\n  - {name: per-ip, key: ip, capacity: 1, period: 1h}\n";
  auto from = [](InProcessGateway& gateway, const testing::Headers& headers) {
    return gateway.Auth("GET", "/", headers).result_int();
  };
  InProcessGateway untrusted("client: {trusted_proxies: [10.0.0.0/8]}\n" + rules);
  EXPECT_EQ(from(untrusted, {{"X-Forwarded-For", "198.51.100.1"}}), 200);
  // The claimed address is ignored: this is the same client, 127.0.0.1, again.
  EXPECT_EQ(from(untrusted, {{"X-Forwarded-For", "198.51.100.2"}}), 429);

  InProcessGateway trusted("client: {trusted_proxies: [127.0.0.1/32]}\n" + rules);
  EXPECT_EQ(from(trusted, {{"X-Forwarded-For", "198.51.100.1"}}), 200);
  EXPECT_EQ(from(trusted, {{"X-Forwarded-For", "198.51.100.2"}}), 200);
  EXPECT_EQ(from(trusted, {{"X-Forwarded-For", "198.51.100.1"}}), 429);
  // A Forwarded header the proxies do not write is ignored, so a client cannot pick a bucket.
  EXPECT_EQ(from(trusted, {{"X-Forwarded-For", "198.51.100.1"}, {"Forwarded", "for=203.0.113.77"}}),
            429);
  // The proxy finds the client by the same rules.
  EXPECT_EQ(trusted.Proxy(MakeRequest(verb::get, "/", {{"X-Forwarded-For", "198.51.100.1"}}))
                .result_int(),
            429);
}

}  // namespace
}  // namespace sluice::http
