// `quota_store:` and the durable rules that count in it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/yaml_field.h"
#include "sluice/limiter.h"
#include "sluice/rule.h"
#include "stores/quota_store_kind.h"

namespace sluice::config {

// Where durable rules count, and what a check decides when it cannot be asked.
struct QuotaStoreConfig {
  std::string type;  // `type`: a kind of stores::QuotaStoreKinds()
  std::shared_ptr<const stores::QuotaStoreSettings> settings;  // its other fields, as it read them
  FailurePolicy failure = FailurePolicy::kClosed;

  bool operator==(const QuotaStoreConfig& other) const {
    return type == other.type && failure == other.failure && settings->Equals(*other.settings);
  }
};

// `quota_store: {type: postgres, url, password | password_file, timeout, connect_timeout, pool,
// failure}`: `type` and `failure`, and the kind's own fields.
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
