// `quota_store:` and the durable rules that count in it.
#pragma once

#include <vector>

#include "config/yaml_field.h"
#include "sluice/limiter.h"
#include "sluice/postgres_options.h"
#include "sluice/rule.h"

namespace sluice::config {

// Where durable rules count, and what a check decides when it cannot be asked.
struct QuotaStoreConfig {
  PostgresOptions postgres;  // `url`, the password, `timeout`, `connect_timeout`, `pool`
  FailurePolicy failure = FailurePolicy::kClosed;

  bool operator==(const QuotaStoreConfig&) const = default;
};

// `quota_store: {type: postgres, url, password | password_file, timeout, connect_timeout, pool,
// failure}`.
QuotaStoreConfig ParseQuotaStore(const YamlField& f);

// The calendar period a rule's `period` names (day, week, month, year), refused on a rule that is
// not `durable: true`; kNone for a duration.
CalendarPeriod ParseCalendarPeriod(const YamlField& rule);

// A rule's `durable`: a durable rule is a fixed window (an `algorithm` other than fixed-window is
// refused).
void ParseDurable(const YamlField& f, Rule& rule);

// Refuses a durable rule of `rules` (parsed from `fields`, one each) without a quota store.
void ValidateDurableRules(const std::vector<Rule>& rules, bool has_quota_store,
                          const YamlField& fields);

}  // namespace sluice::config
