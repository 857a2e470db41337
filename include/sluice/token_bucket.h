// The token bucket's arithmetic, exactly as the Redis script does it, for stores that keep
// buckets themselves. Pure: no I/O, the time is passed in.
#pragma once

#include <cstdint>
#include <optional>

#include "sluice/rule.h"

namespace sluice {

// What a store keeps for one bucket.
struct BucketState {
  double tokens = 0;       // tokens in the bucket at `updated_ms`, possibly fractional
  int64_t updated_ms = 0;  // the store's clock at the last change
  double tat_ms = 0;       // GCRA's one number instead: when the bucket is full again

  friend bool operator==(const BucketState&, const BucketState&) = default;
};

// The answer for one bucket: the integers the script returns.
struct BucketReply {
  bool allowed = false;
  int64_t remaining = 0;  // whole tokens left after this request; 0 while the bucket is in debt
  int64_t retry_ms = 0;   // when rejected: milliseconds until enough tokens are back
  // For an op that takes up to its cost (BucketOp::up_to): the tokens it took. 0 otherwise.
  int64_t granted = 0;
  // Milliseconds until the bucket is full again (for a fixed window: until the window ends),
  // from its exact state: the bucket's expiry. 0 when it is full, and for a leased count (whose
  // gateway holds tokens, not the bucket).
  int64_t reset_ms = 0;

  friend bool operator==(const BucketReply&, const BucketReply&) = default;
};

// The result of taking tokens: the reply, and what the store must keep.
struct TakeOutcome {
  BucketReply reply;
  BucketState state;   // the new state, as Redis would store it
  int64_t ttl_ms = 0;  // forget the bucket after this long; <= 0 means forget it now (it is full)
};

// Refills a bucket up to `now_ms` and takes `cost` tokens if they are there. A missing bucket
// (`state` empty) is full; elapsed time is clamped at 0, so a clock that steps back only pauses
// refills. A negative cost gives tokens back, never above capacity. A bucket in debt (below
// empty, TakeTokensInDebt) refuses every cost, 0 included, until it has refilled past empty. The
// arithmetic is the script's, step for step in IEEE doubles; Redis 7 stores a Lua number in 17
// significant digits, which read back as the same double, so an in-process store and Redis decide
// alike.
TakeOutcome TakeTokens(const std::optional<BucketState>& state, const Limit& limit, int64_t cost,
                       int64_t now_ms);

// Takes as many of `cost` (>= 0) whole tokens as the bucket holds: a lease or a late count that
// must not fail for want of all of them. The reply says how many in `granted`; it is allowed
// when that is all of `cost`, and when nothing was there its retry_ms is the time until one
// token is back.
// The most a bucket can owe: one period's tokens, so that a report of any size keeps its client
// out for at most about one period.
inline int64_t MaxDebt(const Limit& limit) { return limit.tokens; }

// Takes `cost` tokens whether they are there or not: a count reported after the work was done
// (what a response cost), which it is too late to refuse. The bucket may go below empty, to at
// most MaxDebt tokens owed, and refills from there. The reply is allowed when the bucket is not
// in debt afterwards; when it is, retry_ms is the time until it is out of debt. Any cost >= 0.
TakeOutcome TakeTokensInDebt(const std::optional<BucketState>& state, const Limit& limit,
                             int64_t cost, int64_t now_ms);

TakeOutcome TakeTokensUpTo(const std::optional<BucketState>& state, const Limit& limit,
                           int64_t cost, int64_t now_ms);

}  // namespace sluice
