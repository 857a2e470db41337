// ShouldRateLimit requests written as plain lists, and the descriptors they are asked of, for the
// tests of Envoy's rate limit service that plan requests in process and those that send them to
// a running `sluice serve`.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.pb.h"

namespace sluice::rls {

inline const char* const kDescriptors = R"(
domain: edge
descriptors:
  - key: client
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: client
    value: vip
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: client
    value: bot-*
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: client
    value: internal
    rate_limit: {unlimited: true}
  - key: route
    value: /api
    descriptors:
      - key: method
        rate_limit: {unit: minute, requests_per_unit: 2}
  - key: canary
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: shared
    rate_limit: {unit: hour, requests_per_unit: 50}
)";

// One descriptor's entries, key and value, in order.
using DescriptorEntries = std::vector<std::pair<std::string, std::string>>;

// A request for `domain` with a descriptor for each list of entries.
inline envoy::service::ratelimit::v3::RateLimitRequest RequestOf(
    std::string domain, const std::vector<DescriptorEntries>& descriptors) {
  envoy::service::ratelimit::v3::RateLimitRequest request;
  request.set_domain(std::move(domain));
  for (const DescriptorEntries& entries : descriptors) {
    auto* descriptor = request.add_descriptors();
    for (const auto& [key, value] : entries) {
      auto* entry = descriptor->add_entries();
      entry->set_key(key);
      entry->set_value(value);
    }
  }
  return request;
}

}  // namespace sluice::rls
