#include "sluice/bucket.h"

#include "sluice/fixed_window.h"
#include "sluice/gcra.h"

namespace sluice {

TakeOutcome TakeFromBucket(Algorithm algorithm, const std::optional<BucketState>& state,
                           const Limit& limit, int64_t cost, int64_t now_ms) {
  switch (algorithm) {
    case Algorithm::kGcra:
      return TakeGcra(state ? std::optional<double>(state->tat_ms) : std::nullopt, limit, cost,
                      now_ms);
    case Algorithm::kFixedWindow:
      return TakeFixedWindow(
          state ? std::optional<int64_t>(static_cast<int64_t>(state->tokens)) : std::nullopt, limit,
          cost, now_ms);
    case Algorithm::kTokenBucket:
      break;
  }
  return TakeTokens(state, limit, cost, now_ms);
}

}  // namespace sluice
