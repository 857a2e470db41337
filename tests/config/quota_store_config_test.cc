// `quota_store:` and durable rules in the configuration file.
#include <gtest/gtest.h>

#include "config/config.h"
#include "stores/postgres/postgres_kind.h"

namespace sluice::config {
namespace {

constexpr const char* kQuotaStore =
    "quota_store:\n"
    "  type: postgres\n"
    "  url: postgresql://sluice@db.internal:5432/sluice\n"
    "  password_file: /run/secrets/pg\n"
    "  timeout: 200ms\n"
    "  pool: 4\n";

Result<Config> ParseWithQuotaStore(const std::string& yaml) {
  return ParseConfig("upstream: {address: 127.0.0.1:9000}\n" + yaml, "sluice.yaml");
}

TEST(QuotaStoreConfigTest, TheIssuesExample) {
  Result<Config> c = ParseWithQuotaStore(std::string(kQuotaStore) +
                                         "rules:\n"
                                         "  - name: monthly\n"
                                         "    key: tenant\n"
                                         "    capacity: 1000000\n"
                                         "    period: month\n"
                                         "    durable: true\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_TRUE(c->quota_store);
  EXPECT_EQ(c->quota_store->type, "postgres");
  const PostgresOptions& pg =
      dynamic_cast<const stores::PostgresSettings&>(*c->quota_store->settings).options();
  EXPECT_EQ(pg.url, "postgresql://sluice@db.internal:5432/sluice");
  EXPECT_EQ(pg.password_file, "/run/secrets/pg");
  EXPECT_EQ(pg.timeout.count(), 200);
  EXPECT_EQ(pg.pool, 4U);
  EXPECT_EQ(pg.Describe(), "postgres db.internal:5432/sluice");
  EXPECT_EQ(c->quota_store->failure, FailurePolicy::kClosed);
  EXPECT_EQ(LimiterOptionsOf(*c).quota_failure, FailurePolicy::kClosed);
  const Rule& rule = c->rules.front();
  EXPECT_TRUE(rule.durable);
  EXPECT_EQ(rule.calendar, CalendarPeriod::kMonth);
  EXPECT_EQ(rule.algorithm, Algorithm::kFixedWindow);
  EXPECT_EQ(rule.limit, (Limit{1'000'000, 1'000'000, 31LL * 24 * 3600 * 1000}));
}

TEST(QuotaStoreConfigTest, DurableRulesTakeDurationsAndCapacityOverrides) {
  Result<Config> c =
      ParseWithQuotaStore(std::string(kQuotaStore) +
                          "  failure: open\n"
                          "rules:\n"
                          "  - {name: weekly, key: key, capacity: 50, period: 7d, durable: true,\n"
                          "     overrides: {ak_big: {capacity: 500}}}\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->quota_store->failure, FailurePolicy::kOpen);
  const Rule& rule = c->rules.front();
  EXPECT_EQ(rule.calendar, CalendarPeriod::kNone);
  EXPECT_EQ(rule.limit.period_ms, 7LL * 24 * 3600 * 1000);
  EXPECT_EQ(rule.LimitFor("ak_big").capacity, 500);
}

TEST(QuotaStoreConfigTest, MistakesAreRefusedWithTheField) {
  struct Case {
    std::string yaml;
    std::string error;
  };
  const std::string rule =
      "rules: [{name: q, key: tenant, capacity: 5, period: month, durable: true";
  for (const Case& c : std::vector<Case>{
           {rule + "}]\n", "rules[0].durable: needs a quota_store"},
           {"rules: [{name: q, key: tenant, capacity: 5, period: month}]\n",
            "rules[0].period: a calendar period"},
           {std::string(kQuotaStore) + rule + ", algorithm: gcra}]\n",
            "rules[0].algorithm: a durable rule is a fixed window"},
           {std::string(kQuotaStore) + rule + ", tokens: 1}]\n", "tokens (1) must equal"},
           {std::string(kQuotaStore) + rule + ", overrides: {x: {capacity: 9, period: 1d}}}]\n",
            "overrides change only the capacity"},
           {std::string(kQuotaStore) + rule + ", counting: leased}]\n", "counting"},
           {"quota_store: {type: mysql, url: 'postgresql://h/d'}\nrules: []\n", "quota_store.type"},
           {"quota_store: {type: postgres}\nrules: []\n", "needs a url"},
           {"quota_store: {type: postgres, url: 'redis://h'}\nrules: []\n",
            "quota_store.url: must be a postgresql:// URI"},
           {"quota_store: {type: postgres, url: 'postgresql://u:secret@h/d', password: x}\n"
            "rules: []\n",
            "quota_store.password: is given twice"},
           {"quota_store: {type: postgres, url: 'postgresql://h/d', password: x, "
            "password_file: /f}\nrules: []\n",
            "quota_store.password_file: is given beside password"},
           {"quota_store: {type: postgres, url: 'postgresql://h/d', pool: 0}\nrules: []\n",
            "quota_store.pool"},
           {"quota_store: {type: postgres, url: 'postgresql://h/d', failure: maybe}\nrules: []\n",
            "quota_store.failure"},
       }) {
    Result<Config> parsed = ParseWithQuotaStore(c.yaml);
    ASSERT_FALSE(parsed.ok()) << c.yaml;
    EXPECT_NE(parsed.status().message().find(c.error), std::string::npos)
        << parsed.status().message();
    EXPECT_EQ(parsed.status().message().find("secret"), std::string::npos);
  }
}

}  // namespace
}  // namespace sluice::config
