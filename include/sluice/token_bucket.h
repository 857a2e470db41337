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
  int64_t remaining = 0;  // tokens left after this request, rounded down
  int64_t retry_ms = 0;   // when rejected: milliseconds until enough tokens are back
  // For an op that takes up to its cost (BucketOp::up_to): the tokens it took. 0 otherwise.
  int64_t granted = 0;

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
// refills. A negative cost gives tokens back, never above capacity. The arithmetic is the
// script's, step for step in IEEE doubles; Redis 7 stores a Lua number in 17 significant digits,
// which read back as the same double, so an in-process store and Redis decide alike.
TakeOutcome TakeTokens(const std::optional<BucketState>& state, const Limit& limit, int64_t cost,
                       int64_t now_ms);

// Takes as many of `cost` (>= 0) whole tokens as the bucket holds: a lease or a late count that
// must not fail for want of all of them. The reply says how many in `granted`; it is allowed
// when that is all of `cost`, and when nothing was there its retry_ms is the time until one
// token is back.
TakeOutcome TakeTokensUpTo(const std::optional<BucketState>& state, const Limit& limit,
                           int64_t cost, int64_t now_ms);

}  // namespace sluice
