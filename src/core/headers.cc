#include "sluice/headers.h"

#include <charconv>
#include <iterator>
#include <limits>

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

// `"<name>";<first>=<a>;<second>=<b>`, a structured field item with two parameters, written into
// one string: this runs for every answer the gateway relays.
std::string Item(std::string_view name, char first, int64_t a, char second, int64_t b) {
  std::string item;
  item.reserve(name.size() + 2 * (std::numeric_limits<int64_t>::digits10 + 2) + 8);
  item += '"';
  item += name;
  item += "\";";
  item += first;
  item += '=';
  char digits[std::numeric_limits<int64_t>::digits10 + 2];
  item.append(digits, std::to_chars(digits, std::end(digits), a).ptr);
  item += ';';
  item += second;
  item += '=';
  item.append(digits, std::to_chars(digits, std::end(digits), b).ptr);
  return item;
}

}  // namespace

std::vector<Header> RateLimitHeaders(const Decision& decision, const std::vector<Rule>& rules,
                                     HeaderStyles styles) {
  std::vector<Header> headers;
  if (!decision.checked || !decision.tightest) return headers;
  headers.reserve(6);
  const RuleVerdict& v = decision.verdicts[*decision.tightest];
  const std::string& name = rules[v.rule].name;
  const int64_t reset = SecondsToNextToken(v);
  if (styles.ietf) {
    headers.emplace_back("RateLimit-Policy",
                         Item(name, 'q', v.limit.capacity, 'w', CeilSeconds(v.limit.period_ms)));
    headers.emplace_back("RateLimit", Item(name, 'r', v.remaining, 't', reset));
  }
  if (styles.x_ratelimit) {
    headers.emplace_back("X-RateLimit-Limit", std::to_string(v.limit.capacity));
    headers.emplace_back("X-RateLimit-Remaining", std::to_string(v.remaining));
    headers.emplace_back("X-RateLimit-Reset", std::to_string(reset));
  }
  if (!decision.allowed)
    headers.emplace_back("Retry-After", std::to_string(decision.retry_after_s));
  return headers;
}

}  // namespace sluice
