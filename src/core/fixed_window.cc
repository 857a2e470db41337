#include "sluice/fixed_window.h"

#include <algorithm>
#include <string>

#include "algorithm_kind.h"

namespace sluice {

// Mirrors fixed_window.lua line by line; keep the two in step.
TakeOutcome TakeFixedWindow(const std::optional<int64_t>& count, const Limit& limit, int64_t cost,
                            int64_t now_ms) {
  const int64_t window_end = now_ms - now_ms % limit.period_ms + limit.period_ms;
  int64_t counted = count.value_or(0);
  TakeOutcome out;
  if (counted + cost <= limit.capacity) {
    counted = std::max<int64_t>(0, counted + cost);
    out.reply.allowed = true;
  } else {
    out.reply.retry_ms = window_end - now_ms;  // the next window starts empty
  }
  out.state.tokens = static_cast<double>(counted);
  out.state.updated_ms = now_ms;
  out.ttl_ms = counted == 0 ? 0 : window_end - now_ms;  // nothing counted: no key
  out.reply.reset_ms = out.ttl_ms;
  out.reply.remaining = limit.capacity - counted;
  return out;
}

namespace {

// A window allows `capacity` each `period` and has no separate refill rate: `tokens`, if given,
// must say the same.
Status ValidateWindow(const Limit& limit) {
  if (limit.tokens == limit.capacity) return {};
  return Status::InvalidArgument("a fixed window allows capacity requests each period; tokens (" +
                                 std::to_string(limit.tokens) + ") must equal capacity (" +
                                 std::to_string(limit.capacity) + ")");
}

}  // namespace

AlgorithmKind FixedWindowAlgorithm() {
  return {
      .id = Algorithm::kFixedWindow,
      .name = "fixed-window",
      .key_prefix = "fw:",
      .take =
          [](const std::optional<BucketState>& state, const Limit& limit, int64_t cost,
             int64_t now_ms) {
            return TakeFixedWindow(
                state ? std::optional<int64_t>(static_cast<int64_t>(state->tokens)) : std::nullopt,
                limit, cost, now_ms);
          },
      .validate = ValidateWindow,
      .partial_takes = false};
}

}  // namespace sluice
