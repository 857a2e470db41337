#include "config/quota_store_config.h"

#include "common/registry.h"
#include "config/schema.h"

namespace sluice::config {

QuotaStoreConfig ParseQuotaStore(const YamlField& f) {
  f.ExpectMap(KeysOf("quota_store"));
  const std::vector<std::string_view> types =
      NamesOf(stores::QuotaStoreKinds(), &stores::QuotaStoreKind::type);
  if (!f.Has("type")) f.Fail("needs a type (" + std::string(types.front()) + ")");
  const stores::QuotaStoreKind& kind = *stores::FindQuotaStoreKind(f["type"].OneOf(types));
  QuotaStoreConfig quota;
  quota.type = std::string(kind.type);
  quota.settings = kind.parse(f);
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
