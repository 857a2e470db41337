// The configuration file of `sluice serve` (ParseConfig): YAML from whoever may edit it, and
// reloaded on SIGHUP, so a bad file must be an error, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view yaml(reinterpret_cast<const char*>(data), size);
  sluice::Result<sluice::config::Config> config = sluice::config::ParseConfig(yaml, "fuzz.yaml");
  // A configuration that parsed must also give the limiter its options, as serving does.
  if (config.ok()) (void)sluice::config::LimiterOptionsOf(*config);
  return 0;
}
