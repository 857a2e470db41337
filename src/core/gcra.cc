#include "sluice/gcra.h"

#include <algorithm>
#include <cmath>

#include "algorithm_kind.h"

namespace sluice {

// Mirrors gcra.lua line by line; keep the two in step.
TakeOutcome TakeGcra(const std::optional<double>& tat_ms, const Limit& limit, int64_t cost,
                     int64_t now_ms) {
  const auto capacity = static_cast<double>(limit.capacity);
  const double interval = static_cast<double>(limit.period_ms) / static_cast<double>(limit.tokens);
  const auto now = static_cast<double>(now_ms);
  const double burst = capacity * interval;
  // The TAT gathers one rounding per request; a billionth of a token of slack keeps answers
  // that are whole numbers exactly (5 tokens, not 4.9999999999999991) whole.
  const double slack = interval * 1e-9;

  double tat = std::min(std::max(tat_ms.value_or(now), now), now + burst);
  const double next_tat = std::max(now, tat + static_cast<double>(cost) * interval);
  TakeOutcome out;
  if (next_tat - now <= burst + slack) {
    tat = next_tat;
    out.reply.allowed = true;
  } else {
    out.reply.retry_ms = static_cast<int64_t>(std::ceil(next_tat - now - burst - slack));
  }
  out.ttl_ms = static_cast<int64_t>(std::ceil(tat - now));
  out.reply.reset_ms = std::max<int64_t>(0, out.ttl_ms);
  out.state.tat_ms = tat;
  out.state.updated_ms = now_ms;
  out.reply.remaining = static_cast<int64_t>(std::floor(capacity - (tat - now) / interval + 1e-9));
  return out;
}

AlgorithmKind GcraAlgorithm() {
  return {.id = Algorithm::kGcra,
          .name = "gcra",
          .key_prefix = "gcra:",
          .take =
              [](const std::optional<BucketState>& state, const Limit& limit, int64_t cost,
                 int64_t now_ms) {
                return TakeGcra(state ? std::optional<double>(state->tat_ms) : std::nullopt, limit,
                                cost, now_ms);
              },
          .validate = [](const Limit&) { return Status(); },
          .partial_takes = false};
}

}  // namespace sluice
