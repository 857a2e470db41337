// The small fixed descriptor configuration the rate limit service's fuzz targets plan requests
// against: a limit, a replaced one, unlimited, zero, shadow, wildcard and nested descriptors, so
// that every kind of MatchedDescriptor comes up.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.pb.h"
#include "rls/descriptor_config.h"
#include "rls/descriptor_matcher.h"
#include "rls/rate_limit_plan.h"

namespace sluice::fuzz {

inline const rls::DescriptorMatcher& FixedMatcher() {
  static const std::unique_ptr<rls::DescriptorMatcher> matcher = [] {
    const char* const kConfig = R"(
domain: d
descriptors:
  - key: client
    rate_limit: {unit: minute, requests_per_unit: 10, name: per-client}
  - key: client
    value: free
    rate_limit: {unit: second, requests_per_unit: 2, name: free, replaces: [{name: per-client}]}
  - key: tier
    value: open
    rate_limit: {unlimited: true}
  - key: tier
    value: closed
    rate_limit: {unit: second, requests_per_unit: 0}
  - key: canary
    shadow_mode: true
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: path
    value: /api/*
    rate_limit: {unit: hour, requests_per_unit: 100, unit_multiplier: 2, quota_mode: true}
  - key: org
    descriptors:
      - key: user
        rate_limit: {unit: day, requests_per_unit: 1000}
)";
    std::vector<rls::DomainConfig> domains;
    domains.push_back(rls::ParseDomainConfig(kConfig, "fuzz.yaml").value());
    return std::make_unique<rls::DescriptorMatcher>(std::move(domains));
  }();
  return *matcher;
}

// Plans `request` as ShouldRateLimit does, then answers it as if the store allowed every op
// with a reply derived from the op's own numbers, with and without headers; each response is
// handed to `inspect`.
inline void PlanAndRespond(
    const rls::RateLimitRequest& request,
    const std::function<void(const rls::RateLimitResponse&)>& inspect =
        [](const rls::RateLimitResponse&) {}) {
  for (const bool quota_mode : {false, true}) {
    Result<rls::Plan> plan = rls::PlanRequest(FixedMatcher(), request, "rl:", quota_mode);
    if (!plan.ok()) continue;
    std::vector<BucketReply> replies;
    for (size_t i = 0; i < plan->ops.size(); ++i) {
      const BucketOp& op = plan->ops[i];
      replies.push_back({.allowed = i % 2 == 0,
                         .remaining = op.limit.capacity - op.cost,
                         .retry_ms = op.limit.period_ms,
                         .reset_ms = op.limit.period_ms});
    }
    inspect(rls::Respond(*plan, replies, config::RlsHeaderNames{}));
    inspect(rls::Respond(*plan, replies, std::nullopt));
    inspect(rls::RespondUnchecked(*plan, quota_mode));
  }
}

}  // namespace sluice::fuzz
