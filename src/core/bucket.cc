#include "sluice/bucket.h"

#include "algorithm_kind.h"

namespace sluice {

TakeOutcome TakeFromBucket(Algorithm algorithm, const std::optional<BucketState>& state,
                           const Limit& limit, int64_t cost, int64_t now_ms) {
  return AlgorithmOf(algorithm).take(state, limit, cost, now_ms);
}

}  // namespace sluice
