// One bucket step for any algorithm: what an in-process store (or a gateway's local share of a
// bucket) computes where Redis would run the algorithm's script.
#pragma once

#include <cstdint>
#include <optional>

#include "sluice/rule.h"
#include "sluice/token_bucket.h"

namespace sluice {

// Takes `cost` from the bucket in `state` (empty: no key, a fresh bucket) by `algorithm`'s
// arithmetic: TakeTokens, TakeGcra or TakeFixedWindow.
TakeOutcome TakeFromBucket(Algorithm algorithm, const std::optional<BucketState>& state,
                           const Limit& limit, int64_t cost, int64_t now_ms);

}  // namespace sluice
