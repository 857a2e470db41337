// Redis and sentinel URLs (ParseRedisUrl: redis://, rediss://, unix://, sentinel://) and
// host:port addresses (ParseHostPort), from the configuration and the environment.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sluice/redis_options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)sluice::ParseRedisUrl(text);
  (void)sluice::ParseHostPort(text);
  return 0;
}
