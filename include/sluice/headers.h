// The rate limit headers that describe a decision to the client.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/decision.h"
#include "sluice/rule.h"

namespace sluice {

// Which families of rate limit headers to send.
struct HeaderStyles {
  bool ietf = true;         // RateLimit-Policy and RateLimit, the IETF httpapi draft
  bool x_ratelimit = true;  // X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset
};

// A header's name (a constant: it outlives every decision) and its value.
using Header = std::pair<std::string_view, std::string>;

// The headers for `decision`, describing its tightest verdict (`rules` are the limiter's):
//   RateLimit-Policy: "per-key";q=100;w=60      capacity, and the period in seconds
//   RateLimit: "per-key";r=42;t=1               tokens left, and seconds until the next one
//   X-RateLimit-Limit: 100, X-RateLimit-Remaining: 42, X-RateLimit-Reset: 1
// t (and X-RateLimit-Reset) is, for a rejected rule, its retry rounded up to whole seconds;
// for an allowing rule that is not full, the seconds one token takes to come back; 0 when full;
// for a durable rule (a quota), the seconds until its window ends, and w its window's length.
// A rejected decision also gets Retry-After. An unchecked decision, or one with no enforced
// verdict, gets no rate limit headers.
std::vector<Header> RateLimitHeaders(const Decision& decision, const std::vector<Rule>& rules,
                                     HeaderStyles styles);

}  // namespace sluice
