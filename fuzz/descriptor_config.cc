// envoyproxy/ratelimit's descriptor files (ParseDomainConfig), and a matcher built from one
// that parsed, as the rate limit service loads them.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "rls/descriptor_config.h"
#include "rls/descriptor_matcher.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view yaml(reinterpret_cast<const char*>(data), size);
  sluice::Result<sluice::rls::DomainConfig> config =
      sluice::rls::ParseDomainConfig(yaml, "fuzz.yaml");
  if (!config.ok()) return 0;
  std::vector<sluice::rls::DomainConfig> domains;
  domains.push_back(std::move(config).value());
  const sluice::rls::DescriptorMatcher matcher(std::move(domains));
  return 0;
}
