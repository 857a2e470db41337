#include "sluice/decision.h"

namespace sluice {

int64_t RetryAfterSeconds(int64_t retry_ms) {
  if (retry_ms <= 0) return 0;
  return (retry_ms + 999) / 1000;
}

Decision CombineVerdicts(std::vector<RuleVerdict> verdicts) {
  Decision decision;
  for (size_t i = 0; i < verdicts.size(); ++i) {
    const RuleVerdict& v = verdicts[i];
    if (v.shadow) {
      if (!v.allowed) ++decision.shadow_rejections;
      continue;
    }
    if (!decision.tightest || v.remaining < verdicts[*decision.tightest].remaining) {
      decision.tightest = i;
    }
    if (!v.allowed) {
      decision.allowed = false;
      if (!decision.rejecting || v.retry_ms > verdicts[*decision.rejecting].retry_ms) {
        decision.rejecting = i;
      }
    }
  }
  if (decision.rejecting) {
    decision.retry_after_s = RetryAfterSeconds(verdicts[*decision.rejecting].retry_ms);
  }
  decision.verdicts = std::move(verdicts);
  return decision;
}

}  // namespace sluice
