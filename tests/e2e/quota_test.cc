// Durable quotas end to end on the shared PostgreSQL: `sluice serve` with durable rules (headers,
// 429, the policy's refund, /readyz, a crash of the database, errors at start).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "e2e/processes.h"
#include "support/postgres_server.h"

namespace sluice::e2e {
namespace {

using json = nlohmann::json;
using testing::PostgresServer;
using testing::SharedPostgres;

HttpResult Check(const GatewayProcess& gateway, const std::string& key, const std::string& tenant) {
  return Fetch(gateway.check(), "POST", "/v1/check", {},
               json{{"attributes", {{"key", key}, {"tenant", tenant}}}}.dump());
}

// The rate limit rule's tokens left, by a look that takes none.
int64_t PerKeyLeft(const GatewayProcess& gateway, const std::string& key) {
  const HttpResult r = Fetch(gateway.check(), "POST", "/v1/check", {},
                             json{{"attributes", {{"key", key}}}, {"cost", 0}}.dump());
  return json::parse(r.body)["rules"][0]["remaining"].get<int64_t>();
}

TEST(QuotaGatewayTest, AQuotaRejectsWithItsWindowAndTheRefundPolicyGivesTokensBack) {
  Upstream upstream;
  GatewayProcess gateway(upstream.port(),
                         "policy: refund\n" + SharedPostgres().QuotaStoreYaml() +
                             "rules:\n"
                             "  - {name: per-key, key: key, capacity: 100, period: 1m}\n"
                             "  - {name: monthly, key: tenant, capacity: 3, period: month, "
                             "durable: true}\n");
  for (int i = 0; i < 3; ++i) {
    const HttpResult r = Check(gateway, "ak_e2e", "org_e2e");
    ASSERT_EQ(r.status, 200) << r.body;
  }
  EXPECT_EQ(PerKeyLeft(gateway, "ak_e2e"), 97);
  const HttpResult rejected = Check(gateway, "ak_e2e", "org_e2e");
  ASSERT_EQ(rejected.status, 429) << rejected.body;
  EXPECT_EQ(json::parse(rejected.body)["rejected_by"], "monthly");
  // The window is this calendar month, in seconds; Retry-After runs to its end.
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  const int month_days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const int year = utc.tm_year + 1900;
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  const int days = month_days[utc.tm_mon] + (utc.tm_mon == 1 && leap ? 1 : 0);
  EXPECT_EQ(rejected.Header("ratelimit-policy"),
            "\"monthly\";q=3;w=" + std::to_string(days * 86400));
  std::tm next = utc;
  next.tm_mday = 1;
  next.tm_hour = next.tm_min = next.tm_sec = 0;
  next.tm_mon += 1;
  const auto to_month_end = static_cast<int64_t>(timegm(&next) - now);
  const int64_t retry_after = std::stoll(rejected.Header("retry-after"));
  EXPECT_NEAR(static_cast<double>(retry_after), static_cast<double>(to_month_end), 5);
  EXPECT_EQ(PerKeyLeft(gateway, "ak_e2e"), 97);  // the rejected request's token came back

  // A tenant over its quota is answered from memory (no statement), with the same answer.
  const HttpResult again = Check(gateway, "ak_e2e", "org_e2e");
  EXPECT_EQ(again.status, 429);
  EXPECT_EQ(again.Header("ratelimit-policy"), rejected.Header("ratelimit-policy"));
  // The quota store is a node of /metrics.
  const HttpResult metrics = Fetch(gateway.admin(), "GET", "/metrics");
  EXPECT_NE(metrics.body.find("node=\"postgres 127.0.0.1:" +
                              std::to_string(SharedPostgres().port()) + "/sluice\""),
            std::string::npos);
  EXPECT_EQ(metrics.body.find(PostgresServer::kPassword), std::string::npos);
}

TEST(QuotaGatewayTest, ReadinessFollowsTheQuotaStoreAndClosedFailsAQuotaClosed) {
  Upstream upstream;
  GatewayProcess gateway(upstream.port(),
                         SharedPostgres().QuotaStoreYaml() +
                             "rules:\n"
                             "  - {name: daily, key: tenant, capacity: 100, period: "
                             "day, durable: true}\n");
  EXPECT_EQ(Fetch(gateway.admin(), "GET", "/readyz").status, 200);
  EXPECT_EQ(Check(gateway, "k", "org_ready").status, 200);
  SharedPostgres().Crash();
  EXPECT_TRUE(WaitUntil(
      [&] { return Fetch(gateway.admin(), "GET", "/readyz").body == "quota store unreachable\n"; },
      milliseconds(5000)));
  const HttpResult closed = Check(gateway, "k", "org_ready");
  SharedPostgres().Start();
  EXPECT_EQ(closed.status, 503);
  EXPECT_EQ(json::parse(closed.body)["error"], "quota store unavailable");
  EXPECT_EQ(closed.body.find("127.0.0.1"), std::string::npos);
  EXPECT_TRUE(WaitUntil([&] { return Fetch(gateway.admin(), "GET", "/readyz").status == 200; },
                        milliseconds(10'000)));
  EXPECT_EQ(Check(gateway, "k", "org_ready").status, 200);
  EXPECT_NE(gateway.Log().find("quota store unavailable"), std::string::npos);
}

// `sluice serve` with `config` exits at start with a message naming what is wrong.
std::string StartFails(const std::string& body) {
  const uint16_t port = FreePort();
  const std::string path = "/tmp/sluice-test-quota-" + std::to_string(port) + ".yaml";
  std::ofstream(path) << "check_listen: 127.0.0.1:" << port
                      << "\nadmin_listen: 127.0.0.1:" << FreePort() << "\n"
                      << body;
  const std::string log = "/tmp/sluice-test-quota-" + std::to_string(port) + ".log";
  Process serve({SLUICE_BINARY, "serve", "--config", path}, log);
  EXPECT_EQ(serve.Wait(milliseconds(15'000)), 1);
  std::ifstream text(log);
  return {std::istreambuf_iterator<char>(text), {}};
}

TEST(QuotaGatewayTest, AWrongTableOrPasswordStopsTheStartWithAClearMessage) {
  SharedPostgres().CreateDatabase("e2e_wrong_shape");
  SharedPostgres().Sql(
      "CREATE TABLE sluice_quota (bucket text PRIMARY KEY, used bigint);"
      "ALTER TABLE sluice_quota OWNER TO sluice",
      "e2e_wrong_shape");
  const std::string rules =
      "rules: [{name: q, key: tenant, capacity: 5, period: month, durable: true}]\n";
  std::string log = StartFails(SharedPostgres().QuotaStoreYaml("e2e_wrong_shape") + rules);
  EXPECT_NE(log.find("the table sluice_quota has the columns (bucket text, used bigint)"),
            std::string::npos)
      << log;
  log = StartFails("quota_store: {type: postgres, url: '" + SharedPostgres().Url() +
                   "', password: wrong-password}\n" + rules);
  EXPECT_NE(log.find("password authentication failed"), std::string::npos) << log;
  EXPECT_EQ(log.find("wrong-password"), std::string::npos);
}

}  // namespace
}  // namespace sluice::e2e
