#include "open_store.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "sluice/cluster_store.h"
#include "sluice/memory_store.h"
#include "sluice/redis_store.h"

namespace sluice::cli {

namespace {

using std::chrono::milliseconds;

std::string Describe(const config::StoreConfig& config) {
  if (config.type == config::StoreType::kRedis) {
    return "redis " + config.redis.host + ":" + std::to_string(config.redis.port);
  }
  std::string seeds;
  for (const auto& [host, port] : config.cluster.seeds) {
    seeds += (seeds.empty() ? "" : ", ") + host + ":" + std::to_string(port);
  }
  return "redis cluster (" + seeds + ")";
}

milliseconds ConnectTimeout(const config::StoreConfig& config) {
  return config.type == config::StoreType::kRedis ? config.redis.connect_timeout
                                                  : config.cluster.connect_timeout;
}

// A store that talks to Redis: one server or a cluster, on `io` or on a thread of its own.
template <typename S>
std::shared_ptr<S> MakeShared(const config::StoreConfig& config, boost::asio::io_context* io) {
  if constexpr (std::is_same_v<S, RedisStore>) {
    return io != nullptr ? std::make_shared<S>(config.redis, *io)
                         : std::make_shared<S>(config.redis);
  } else {
    return io != nullptr ? std::make_shared<S>(config.cluster, *io)
                         : std::make_shared<S>(config.cluster);
  }
}

// One store per io_context given (or one on its own thread when `ios` holds a null), all given
// up to the connect timeout together to become ready.
template <typename S>
OpenedStores OpenShared(const config::StoreConfig& config,
                        const std::vector<boost::asio::io_context*>& ios) {
  std::vector<std::shared_ptr<S>> stores;
  stores.reserve(ios.size());
  for (boost::asio::io_context* io : ios) stores.push_back(MakeShared<S>(config, io));
  const auto deadline = std::chrono::steady_clock::now() + ConnectTimeout(config);
  for (const auto& s : stores) {
    const auto left =
        std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
    if (!s->WaitReady(std::max(left, milliseconds(0)))) {
      spdlog::warn("{} is not reachable yet; checks follow the failure policy until it is",
                   Describe(config));
      break;
    }
  }
  auto ready = [stores] {
    return std::all_of(stores.begin(), stores.end(), [](const auto& s) { return s->Ready(); });
  };
  return {std::vector<std::shared_ptr<Store>>(stores.begin(), stores.end()), ready};
}

OpenedStores Open(const config::StoreConfig& config,
                  const std::vector<boost::asio::io_context*>& ios) {
  switch (config.type) {
    case config::StoreType::kMemory:
      return {std::vector<std::shared_ptr<Store>>(ios.size(), std::make_shared<MemoryStore>()),
              [] { return true; }};
    case config::StoreType::kRedis:
      return OpenShared<RedisStore>(config, ios);
    case config::StoreType::kCluster:
      return OpenShared<ClusterStore>(config, ios);
  }
  return {};
}

}  // namespace

OpenedStore OpenStore(const config::StoreConfig& config) {
  OpenedStores opened = Open(config, {nullptr});
  return {opened.stores.front(), opened.ready};
}

OpenedStores OpenStores(const config::StoreConfig& config, http::EventLoops& loops) {
  std::vector<boost::asio::io_context*> ios;
  for (size_t i = 0; i < loops.size(); ++i) ios.push_back(&loops[i]);
  return Open(config, ios);
}

}  // namespace sluice::cli
