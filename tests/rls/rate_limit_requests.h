// ShouldRateLimit requests written as plain lists, for the tests of Envoy's rate limit service
// that plan requests in process and those that send them to a running `sluice serve`.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.pb.h"

namespace sluice::rls {

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
