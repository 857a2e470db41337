// Descriptor files given as text, indexed, for the tests that run the rate limit service in
// process.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <utility>
#include <vector>

#include "rls/descriptor_config.h"
#include "rls/descriptor_matcher.h"

namespace sluice::rls {

// The descriptors of `files` (YAML text, each a domain), indexed; a file that does not parse fails
// the test.
inline std::shared_ptr<const DescriptorMatcher> MatcherOf(const std::vector<const char*>& files) {
  std::vector<DomainConfig> domains;
  for (const char* file : files) {
    Result<DomainConfig> config = ParseDomainConfig(file, "descriptors.yaml");
    EXPECT_TRUE(config.ok()) << config.status().message();
    if (config.ok()) domains.push_back(std::move(config).value());
  }
  return std::make_shared<DescriptorMatcher>(std::move(domains));
}

}  // namespace sluice::rls
