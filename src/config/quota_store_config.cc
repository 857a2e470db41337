#include "config/quota_store_config.h"

#include "config/schema.h"

namespace sluice::config {

QuotaStoreConfig ParseQuotaStore(const YamlField& f) {
  f.ExpectMap(KeysOf("quota_store"));
  if (!f.Has("type")) f.Fail("needs a type (postgres)");
  f["type"].OneOf({"postgres"});
  if (!f.Has("url")) f.Fail("needs a url (postgresql://user@host:port/dbname)");
  QuotaStoreConfig quota;
  PostgresOptions& postgres = quota.postgres;
  postgres.url = f["url"].String();
  const PostgresUrl url = f["url"].Require(ParsePostgresUrl(postgres.url));
  if (f.Has("password") && f.Has("password_file")) {
    f["password_file"].Fail("is given beside password; give one of them");
  }
  for (const char* field : {"password", "password_file"}) {
    if (f.Has(field) && url.has_password) f[field].Fail("is given twice: in the url and here");
  }
  if (f.Has("password")) postgres.password = f["password"].String();
  if (f.Has("password_file")) {
    postgres.password_file = f["password_file"].String();
    if (postgres.password_file.empty()) f["password_file"].Fail("must name a file");
  }
  if (f.Has("timeout")) postgres.timeout = f["timeout"].Duration();
  if (postgres.timeout.count() == 0) f["timeout"].Fail("must be more than 0");
  if (f.Has("connect_timeout")) postgres.connect_timeout = f["connect_timeout"].Duration();
  if (postgres.connect_timeout.count() == 0) f["connect_timeout"].Fail("must be more than 0");
  if (f.Has("pool")) postgres.pool = static_cast<size_t>(f["pool"].Integer(1, 64));
  if (f.Has("failure")) {
    quota.failure = f["failure"].OneOf({"open", "closed"}) == "open" ? FailurePolicy::kOpen
                                                                     : FailurePolicy::kClosed;
  }
  return quota;
}

CalendarPeriod ParseCalendarPeriod(const YamlField& rule) {
  if (!rule.Has("period") || !rule["period"].node().IsScalar()) return CalendarPeriod::kNone;
  const CalendarPeriod calendar = CalendarPeriodNamed(rule["period"].String());
  const bool durable = rule.Has("durable") && rule["durable"].Bool();
  if (calendar != CalendarPeriod::kNone && !durable) {
    rule["period"].Fail(
        "a calendar period (day, week, month, year) is for durable rules; a rate limit takes a "
        "duration (1d, 7d, 30d)");
  }
  return calendar;
}

void ParseDurable(const YamlField& f, Rule& rule) {
  if (!f.Has("durable")) return;
  rule.durable = f["durable"].Bool();
  if (!rule.durable) return;
  if (f.Has("algorithm") && rule.algorithm != Algorithm::kFixedWindow) {
    f["algorithm"].Fail("a durable rule is a fixed window");
  }
  rule.algorithm = Algorithm::kFixedWindow;
}

void ValidateDurableRules(const std::vector<Rule>& rules, bool has_quota_store,
                          const YamlField& fields) {
  size_t i = 0;
  fields.ForEach([&](const YamlField& rule) {
    if (rules[i++].durable && !has_quota_store) {
      rule["durable"].Fail("needs a quota_store to count in");
    }
  });
}

}  // namespace sluice::config
