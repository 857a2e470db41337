#include "sluice/headers.h"

namespace sluice {
namespace {

int64_t CeilSeconds(int64_t ms) { return RetryAfterSeconds(ms); }

// Seconds until the verdict's bucket can take one more request; for a durable rule's quota, until
// its window ends and its count starts again.
int64_t SecondsToNextToken(const RuleVerdict& v) {
  if (v.reset_ms > 0) return CeilSeconds(v.reset_ms);
  if (!v.allowed) return CeilSeconds(v.retry_ms);
  if (v.remaining >= v.limit.capacity) return 0;
  return CeilSeconds((v.limit.period_ms + v.limit.tokens - 1) / v.limit.tokens);
}

}  // namespace

std::vector<Header> RateLimitHeaders(const Decision& decision, const std::vector<Rule>& rules,
                                     HeaderStyles styles) {
  std::vector<Header> headers;
  if (!decision.checked || !decision.tightest) return headers;
  headers.reserve(6);
  const RuleVerdict& v = decision.verdicts[*decision.tightest];
  const std::string& name = rules[v.rule].name;
  const std::string reset = std::to_string(SecondsToNextToken(v));
  if (styles.ietf) {
    headers.emplace_back("RateLimit-Policy",
                         "\"" + name + "\";q=" + std::to_string(v.limit.capacity) +
                             ";w=" + std::to_string(CeilSeconds(v.limit.period_ms)));
    headers.emplace_back("RateLimit",
                         "\"" + name + "\";r=" + std::to_string(v.remaining) + ";t=" + reset);
  }
  if (styles.x_ratelimit) {
    headers.emplace_back("X-RateLimit-Limit", std::to_string(v.limit.capacity));
    headers.emplace_back("X-RateLimit-Remaining", std::to_string(v.remaining));
    headers.emplace_back("X-RateLimit-Reset", reset);
  }
  if (!decision.allowed)
    headers.emplace_back("Retry-After", std::to_string(decision.retry_after_s));
  return headers;
}

}  // namespace sluice
