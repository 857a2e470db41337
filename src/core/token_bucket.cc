#include "sluice/token_bucket.h"

#include <algorithm>
#include <cmath>

#include "algorithm_kind.h"

namespace sluice {

namespace {

// Mirrors token_bucket.lua's take line by line; keep the two in step.
TakeOutcome Take(const std::optional<BucketState>& state, const Limit& limit, int64_t cost,
                 bool in_debt, int64_t now_ms) {
  const auto capacity = static_cast<double>(limit.capacity);
  const double per_ms = static_cast<double>(limit.tokens) / static_cast<double>(limit.period_ms);
  const auto want = static_cast<double>(cost);

  double tokens = state ? state->tokens : capacity;
  const int64_t ts = state ? state->updated_ms : now_ms;
  tokens =
      std::min(capacity, tokens + static_cast<double>(std::max<int64_t>(0, now_ms - ts)) * per_ms);

  TakeOutcome out;
  if (in_debt) {
    tokens = std::min(capacity, std::max(tokens - want, -static_cast<double>(MaxDebt(limit))));
    out.reply.allowed = tokens >= 0;
    if (!out.reply.allowed) out.reply.retry_ms = static_cast<int64_t>(std::ceil(-tokens / per_ms));
  } else if (tokens >= want) {
    tokens = std::min(capacity, tokens - want);
    out.reply.allowed = true;
  } else {
    out.reply.retry_ms = static_cast<int64_t>(std::ceil((want - tokens) / per_ms));
  }
  out.state = {tokens, now_ms};
  out.ttl_ms = static_cast<int64_t>(std::ceil((capacity - tokens) / per_ms));
  out.reply.remaining = std::max<int64_t>(0, static_cast<int64_t>(std::floor(tokens)));
  out.reply.reset_ms = std::max<int64_t>(0, out.ttl_ms);
  return out;
}

}  // namespace

TakeOutcome TakeTokens(const std::optional<BucketState>& state, const Limit& limit, int64_t cost,
                       int64_t now_ms) {
  return Take(state, limit, cost, /*in_debt=*/false, now_ms);
}

TakeOutcome TakeTokensInDebt(const std::optional<BucketState>& state, const Limit& limit,
                             int64_t cost, int64_t now_ms) {
  return Take(state, limit, cost, /*in_debt=*/true, now_ms);
}

TakeOutcome TakeTokensUpTo(const std::optional<BucketState>& state, const Limit& limit,
                           int64_t cost, int64_t now_ms) {
  const int64_t there = TakeTokens(state, limit, 0, now_ms).reply.remaining;
  const int64_t granted = std::min(cost, std::max<int64_t>(0, there));
  TakeOutcome out = TakeTokens(state, limit, granted, now_ms);
  out.reply.granted = granted;
  out.reply.allowed = granted == cost;
  if (granted == 0 && cost > 0)
    out.reply.retry_ms = TakeTokens(state, limit, 1, now_ms).reply.retry_ms;
  return out;
}

AlgorithmKind TokenBucketAlgorithm() {
  return {.id = Algorithm::kTokenBucket,
          .name = "token-bucket",
          .key_prefix = "",
          .take = TakeTokens,
          .validate = [](const Limit&) { return Status(); },
          .partial_takes = true};
}

}  // namespace sluice
