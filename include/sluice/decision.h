// A limiter's answer for one request, combined from the answers of each rule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "sluice/rule.h"
#include "sluice/status.h"

namespace sluice {

// One rule's part in a decision.
struct RuleVerdict {
  size_t rule = 0;  // the rule's position in the limiter's rules
  bool allowed = false;
  int64_t remaining = 0;  // tokens left in the rule's bucket, rounded down
  int64_t retry_ms = 0;   // when rejected: milliseconds until the bucket has enough again
  bool charged = false;   // the request's tokens stayed taken from this bucket
  bool shadow = false;    // the rule is in shadow mode: its verdict is reported, not enforced
  Limit limit = {};       // the limit applied: the rule's, or an override's
  // A durable rule's: milliseconds until its window ends and its count starts again (the rate
  // limit headers' reset); 0 for other rules. Its limit's period_ms is the window's length.
  int64_t reset_ms = 0;

  friend bool operator==(const RuleVerdict&, const RuleVerdict&) = default;
};

// A limiter's decision. Reject if any rule rejects; wait for the longest retry.
struct Decision {
  bool allowed = true;
  // False when the store could not be asked and the failure policy decided; `error` says why.
  bool checked = true;
  Status error;
  // One verdict for each rule that applied, in the limiter's rule order. Under stop-at-first,
  // rules after the first rejection are not asked and have no verdict.
  std::vector<RuleVerdict> verdicts;
  // The enforced verdict with the fewest tokens remaining: the one rate limit headers describe.
  std::optional<size_t> tightest;
  // Among enforced rejecting verdicts, the one with the longest retry: the one a 429 body names.
  std::optional<size_t> rejecting;
  // Shadow rules that would have rejected the request.
  size_t shadow_rejections = 0;
  // Retry-After, in whole seconds rounded up from the longest retry; 0 when allowed.
  int64_t retry_after_s = 0;
  // Rejected by the over-limit cache without asking the store: the verdict is the cached rule's
  // alone, and the request's other rules were neither asked nor charged.
  bool from_cache = false;
  // Asked for all-or-nothing, but the store could not decide every rule in one step (keys on
  // several cluster shards): the rules were charged together and, on a rejection, refunded.
  bool fell_back_to_refund = false;
  // The quota store failed (an error or timeout), and its failure policy decided: `error` says
  // why. The rate limit rules' verdicts stand.
  bool quota_failed = false;
};

// Combines per-rule verdicts into a decision (checked, no error): allowed when every enforced
// verdict allows (or there are none), with the tightest and rejecting verdicts and Retry-After
// filled in. Shadow verdicts are kept and counted but decide nothing.
Decision CombineVerdicts(std::vector<RuleVerdict> verdicts);

// Whole seconds, rounded up: 600 ms gives 1, 2000 ms gives 2, 0 gives 0.
int64_t RetryAfterSeconds(int64_t retry_ms);

}  // namespace sluice
