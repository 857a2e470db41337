#include "sluice/rule.h"

#include <algorithm>
#include <string>

#include "algorithm_kind.h"
#include "plain_name.h"

namespace sluice {
namespace {

// A full refill must take less than this, so that every expiry and retry the script computes
// is a small integer: exact in a double, and printed by Redis's Lua without an exponent.
constexpr double kMaxRefillMs = 10.0 * 366 * 24 * 3600 * 1000;

// Names, attributes and bucket families end up in keys, headers and metrics: keep them plain.
Status ValidateName(std::string_view what, std::string_view value, size_t max_length) {
  if (value.empty()) return Status::InvalidArgument(std::string(what) + " is empty");
  if (value.size() > max_length) {
    return Status::InvalidArgument(std::string(what) + " is longer than " +
                                   std::to_string(max_length) + " characters");
  }
  if (!IsPlainName(value, max_length)) {
    return Status::InvalidArgument(std::string(what) + " \"" + std::string(value) +
                                   "\" may hold only letters, digits, '-', '_' and '.'");
  }
  return {};
}

// "ip", "key", "tenant", or "header:NAME".
Status ValidateAttribute(std::string_view attribute) {
  constexpr std::string_view kHeader = "header:";
  if (attribute.starts_with(kHeader)) {
    return ValidateName("header name", attribute.substr(kHeader.size()), 128);
  }
  return ValidateName("attribute", attribute, 64);
}

Status ValidateRange(std::string_view what, int64_t value, int64_t low, int64_t high) {
  if (value < low || value > high) {
    return Status::InvalidArgument(std::string(what) + " is " + std::to_string(value) +
                                   "; it must be between " + std::to_string(low) + " and " +
                                   std::to_string(high));
  }
  return {};
}

// Local counts stand on partial takes (a lease is a take of up to k tokens), and their intervals
// must be short enough to bound an overshoot and long enough to save calls.
Status ValidateCounting(const LocalCounting& counting, Algorithm algorithm) {
  if (counting.mode == Counting::kShared) return {};
  if (!AlgorithmOf(algorithm).partial_takes) {
    return Status::InvalidArgument("synced and leased counting need the token-bucket algorithm");
  }
  if (Status s = ValidateRange("sync_interval", counting.sync_interval_ms, 10, 3'600'000);
      !s.ok()) {
    return s;
  }
  if (Status s = ValidateRange("lease ttl", counting.lease_ttl_ms, 10, 3'600'000); !s.ok())
    return s;
  if (!(counting.lease_max_fraction > 0 && counting.lease_max_fraction <= 1)) {
    return Status::InvalidArgument("lease max_fraction must be more than 0 and at most 1");
  }
  return {};
}

// A durable rule is a fixed window that the quota store keeps: what it cannot do is refused.
Status ValidateDurable(const Rule& rule) {
  if (!rule.durable) {
    if (rule.calendar == CalendarPeriod::kNone) return {};
    return Status::InvalidArgument("a calendar period (day, week, month, year) needs durable");
  }
  if (rule.algorithm != Algorithm::kFixedWindow) {
    return Status::InvalidArgument("a durable rule is a fixed window");
  }
  if (rule.counting.mode != Counting::kShared || rule.wait.replicas > 0 || rule.CostReported()) {
    return Status::InvalidArgument(
        "a durable rule is counted in the quota store: no local counting, replica wait or "
        "reported cost");
  }
  const int64_t period_ms = rule.calendar == CalendarPeriod::kNone ? rule.limit.period_ms
                                                                   : LongestPeriodMs(rule.calendar);
  if (rule.limit.period_ms != period_ms) {
    return Status::InvalidArgument("a calendar period's limit must be of " +
                                   std::to_string(period_ms) + " ms");
  }
  for (const auto& [value, limit] : rule.overrides) {
    if (limit.period_ms != period_ms) {
      return Status::InvalidArgument("override \"" + value +
                                     "\": a durable rule's overrides change only the capacity");
    }
  }
  return {};
}

}  // namespace

std::string_view CalendarPeriodName(CalendarPeriod period) {
  switch (period) {
    case CalendarPeriod::kDay:
      return "day";
    case CalendarPeriod::kWeek:
      return "week";
    case CalendarPeriod::kMonth:
      return "month";
    case CalendarPeriod::kYear:
      return "year";
    case CalendarPeriod::kNone:
      break;
  }
  return "";
}

CalendarPeriod CalendarPeriodNamed(std::string_view name) {
  for (CalendarPeriod period : {CalendarPeriod::kDay, CalendarPeriod::kWeek, CalendarPeriod::kMonth,
                                CalendarPeriod::kYear}) {
    if (name == CalendarPeriodName(period)) return period;
  }
  return CalendarPeriod::kNone;
}

int64_t LongestPeriodMs(CalendarPeriod period) {
  constexpr int64_t kDayMs = 24LL * 3600 * 1000;
  switch (period) {
    case CalendarPeriod::kDay:
      return kDayMs;
    case CalendarPeriod::kWeek:
      return 7 * kDayMs;
    case CalendarPeriod::kMonth:
      return 31 * kDayMs;
    case CalendarPeriod::kYear:
      return 366 * kDayMs;
    case CalendarPeriod::kNone:
      break;
  }
  return 0;
}

Status Limit::Validate() const {
  if (Status s = ValidateRange("capacity", capacity, 1, kMaxCapacity); !s.ok()) return s;
  if (Status s = ValidateRange("tokens", tokens, 1, kMaxCapacity); !s.ok()) return s;
  if (Status s = ValidateRange("period", period_ms, 1, kMaxPeriodMs); !s.ok()) return s;
  const double refill_ms =
      static_cast<double>(capacity) * static_cast<double>(period_ms) / static_cast<double>(tokens);
  if (refill_ms > kMaxRefillMs) {
    return Status::InvalidArgument("an empty bucket would take longer than ten years to refill");
  }
  return {};
}

const Limit& Rule::LimitFor(std::string_view value) const {
  auto it = overrides.find(value);
  return it == overrides.end() ? limit : it->second;
}

bool Rule::MatchesRoute(const Request& request) const {
  if (!methods.empty() &&
      std::find(methods.begin(), methods.end(), request.method()) == methods.end()) {
    return false;
  }
  return request.path().starts_with(path_prefix);
}

Status Rule::Validate() const {
  auto in_rule = [this](const Status& s) {
    return Status::InvalidArgument("rule \"" + name + "\": " + s.message());
  };
  if (Status s = ValidateName("rule name", name, 128); !s.ok()) return s;
  if (Status s = ValidateAttribute(attribute); !s.ok()) return in_rule(s);
  if (!bucket.empty()) {
    if (Status s = ValidateName("bucket", bucket, 64); !s.ok()) return in_rule(s);
  }
  if (Status s = limit.Validate(); !s.ok()) return in_rule(s);
  if (Status s = AlgorithmOf(algorithm).validate(limit); !s.ok()) return in_rule(s);
  if (Status s = ValidateRange("cost", cost, 0, limit.capacity); !s.ok()) return in_rule(s);
  if (Status s = ValidateRange("wait replicas", wait.replicas, 0, 64); !s.ok()) return in_rule(s);
  if (Status s = ValidateRange("wait timeout_ms", wait.timeout_ms, 0, 10'000); !s.ok()) {
    return in_rule(s);
  }
  if (Status s = ValidateCounting(counting, algorithm); !s.ok()) return in_rule(s);
  if (CostReported() &&
      (!AlgorithmOf(algorithm).partial_takes || counting.mode != Counting::kShared)) {
    return in_rule(Status::InvalidArgument(
        "a cost reported after the fact needs a token bucket counted in the store (it may go "
        "into debt)"));
  }
  if (Status s = ValidateDurable(*this); !s.ok()) return in_rule(s);
  if (wait.replicas > 0 && wait.timeout_ms == 0) {
    return in_rule(
        Status::InvalidArgument("a wait for replicas needs a timeout (0 waits forever)"));
  }
  for (const auto& [overridden, override_limit] : overrides) {
    auto in_override = [&, &value = overridden](const Status& s) {
      return in_rule(Status::InvalidArgument("override \"" + value + "\": " + s.message()));
    };
    if (Status s = override_limit.Validate(); !s.ok()) return in_override(s);
    if (Status s = AlgorithmOf(algorithm).validate(override_limit); !s.ok()) {
      return in_override(s);
    }
    if (Status s = ValidateRange("cost", cost, 0, override_limit.capacity); !s.ok()) {
      return in_override(s);
    }
  }
  return {};
}

}  // namespace sluice
