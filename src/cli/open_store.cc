#include "open_store.h"

#include <spdlog/spdlog.h>

#include "sluice/memory_store.h"
#include "sluice/redis_store.h"

namespace sluice::cli {

OpenedStore OpenStore(const config::StoreConfig& config) {
  if (config.type == config::StoreType::kMemory) {
    return {std::make_shared<MemoryStore>(), [] { return true; }};
  }
  auto redis = std::make_shared<RedisStore>(config.redis);
  if (!redis->WaitReady(config.redis.connect_timeout)) {
    spdlog::warn("redis {}:{} is not reachable yet; checks follow the failure policy until it is",
                 config.redis.host, config.redis.port);
  }
  return {redis, [redis] { return redis->Ready(); }};
}

}  // namespace sluice::cli
