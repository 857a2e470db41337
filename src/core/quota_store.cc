#include "sluice/quota_store.h"

#include <set>
#include <utility>

#include "plain_name.h"
#include "sluice/bucket_key.h"

namespace sluice {
namespace {

Status ValidateOp(const QuotaOp& op) {
  if (!IsPlainName(op.bucket, 64)) {
    return Status::InvalidArgument(
        "a quota's bucket must be a name of 1 to 64 letters, digits, "
        "'-', '_' and '.'");
  }
  const std::string where = "quota " + op.bucket + ": ";
  if (op.value.size() > kMaxAttributeValueBytes) {
    return Status::InvalidArgument(where + "the value is longer than " +
                                   std::to_string(kMaxAttributeValueBytes) + " bytes");
  }
  if (op.limit < 1 || op.limit > Limit::kMaxCapacity) {
    return Status::InvalidArgument(where + "the limit must be between 1 and " +
                                   std::to_string(Limit::kMaxCapacity));
  }
  if (op.cost < 0 || op.cost > Limit::kMaxCapacity) {
    return Status::InvalidArgument(where + "the cost must be between 0 and " +
                                   std::to_string(Limit::kMaxCapacity));
  }
  if (op.window.calendar == CalendarPeriod::kNone &&
      (op.window.duration_ms < 1 || op.window.duration_ms > Limit::kMaxPeriodMs)) {
    return Status::InvalidArgument(where + "the window must be between 1 and " +
                                   std::to_string(Limit::kMaxPeriodMs) + " ms");
  }
  return {};
}

}  // namespace

QuotaWindow WindowOf(const Rule& rule) {
  if (rule.calendar != CalendarPeriod::kNone) return {rule.calendar, 0};
  return {CalendarPeriod::kNone, rule.limit.period_ms};
}

Status ValidateQuotaOps(const std::vector<QuotaOp>& ops) {
  // One quota twice in a check would be judged twice against what was there before either.
  std::set<std::pair<std::string_view, std::string_view>> quotas;
  for (const QuotaOp& op : ops) {
    if (Status s = ValidateOp(op); !s.ok()) return s;
    if (!quotas.emplace(op.bucket, op.value).second) {
      return Status::InvalidArgument("quota " + op.bucket + ": named twice in one check");
    }
  }
  return {};
}

}  // namespace sluice
