// Costs known only after the work: a rule with `cost_from: {response_header: ...}` checks a
// request with a look and charges what the upstream's response says it used (the tokens of an
// LLM response), into debt if need be; the check API's look (`"cost": 0`) and `POST /v1/report`
// do the same for other gateways. `sluice serve` processes on redis-server, with the demo
// upstream's /usage?tokens=N.
#include <gtest/gtest.h>

#include <string>

#include "e2e/processes.h"
#include "support/redis_server.h"

namespace sluice {
namespace {

using e2e::GatewayProcess;
using e2e::Upstream;
using testing::Fetch;
using testing::HttpResult;
using testing::RedisServer;

// A budget of 1,000 tokens a `period` per API key, charged what each response used.
std::string BudgetConfig(uint16_t redis_port, const std::string& period = "1m") {
  return "store: {type: redis, url: 'redis://127.0.0.1:" + std::to_string(redis_port) +
         "', timeout: 500ms}\n"
         "rules:\n"
         "  - name: tokens\n"
         "    key: key\n"
         "    capacity: 1000\n"
         "    period: " +
         period +
         "\n"
         "    cost_from: {response_header: X-Usage-Tokens}\n";
}

HttpResult Use(const GatewayProcess& gateway, const std::string& key, int tokens,
               const std::string& extra = "") {
  return gateway.Get("/usage?tokens=" + std::to_string(tokens) + extra, {{"X-Api-Key", key}});
}

TEST(ReportedCostE2eTest, ABudgetIsServedUntilItsResponsesUsedItThenRefused) {
  RedisServer redis;
  Upstream upstream;
  GatewayProcess gateway(upstream.port(), BudgetConfig(redis.port()));
  HttpResult first = Use(gateway, "ak_1", 300);
  ASSERT_EQ(first.status, 200);
  // The headers say what is left after the response's own charge.
  EXPECT_EQ(first.Header("x-ratelimit-remaining"), "700");
  EXPECT_EQ(Use(gateway, "ak_1", 300).status, 200);
  EXPECT_EQ(Use(gateway, "ak_1", 300).status, 200);
  HttpResult last = Use(gateway, "ak_1", 300);  // 1,200 of 1,000: served, and in debt now
  EXPECT_EQ(last.status, 200);
  EXPECT_EQ(last.Header("x-ratelimit-remaining"), "0");
  HttpResult refused = Use(gateway, "ak_1", 1);
  EXPECT_EQ(refused.status, 429);
  // 200 tokens owed at 1,000 a minute: 12 s until the debt is refilled.
  EXPECT_GE(std::stoi(refused.Header("retry-after")), 11);
  EXPECT_LE(std::stoi(refused.Header("retry-after")), 12);
  EXPECT_EQ(Use(gateway, "ak_2", 1).status, 200);  // another key has its own budget
}

TEST(ReportedCostE2eTest, TwoGatewaysShareTheBudgetExactly) {
  RedisServer redis;
  Upstream upstream;
  // An hour's budget: what refills while the test runs is not a whole 100 tokens.
  GatewayProcess a(upstream.port(), BudgetConfig(redis.port(), "1h"));
  GatewayProcess b(upstream.port(), BudgetConfig(redis.port(), "1h"));
  int served = 0;
  for (int i = 0; i < 20; ++i) {
    if (Use(i % 2 == 0 ? a : b, "ak_shared", 100).status == 200) ++served;
  }
  // Ten responses use the 1,000 tokens; the eleventh finds the bucket empty, not in debt, so it
  // is served and leaves 100 owed; every later one is refused, at either gateway, as one
  // gateway alone would.
  EXPECT_EQ(served, 11);
}

TEST(ReportedCostE2eTest, AMissingOrMalformedHeaderChargesTheRuleCostAndAFailureNothing) {
  RedisServer redis;
  Upstream upstream;
  GatewayProcess gateway(upstream.port(), BudgetConfig(redis.port(), "1h"));
  // No X-Usage-Tokens: the demo upstream's plain answer; the rule's cost (1) is charged.
  HttpResult plain = gateway.Get("/", {{"X-Api-Key", "ak_m"}});
  ASSERT_EQ(plain.status, 200);
  EXPECT_EQ(plain.Header("x-ratelimit-remaining"), "999");
  // A server error did no work: nothing is charged.
  HttpResult failed = Use(gateway, "ak_m", 500, "&status=503");
  EXPECT_EQ(failed.status, 503);
  EXPECT_EQ(Use(gateway, "ak_m", 0).Header("x-ratelimit-remaining"), "999");
  HttpResult malformed = gateway.Get("/usage?tokens=x", {{"X-Api-Key", "ak_m"}});
  EXPECT_EQ(malformed.Header("x-ratelimit-remaining"), "998");  // "x": the rule's cost
  // Nor when the upstream is gone.
  upstream.Stop();
  EXPECT_EQ(Use(gateway, "ak_m", 500).status, 502);
  HttpResult look = Fetch(gateway.check(), "POST", "/v1/check", {},
                          R"({"attributes": {"key": "ak_m"}, "cost": 0})");
  EXPECT_NE(look.body.find(R"("remaining":998)"), std::string::npos) << look.body;
}

}  // namespace
}  // namespace sluice
