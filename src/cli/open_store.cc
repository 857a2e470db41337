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
  if (config.type != config::StoreType::kCluster) return config.redis.Describe();
  std::string seeds;
  for (const auto& [host, port] : config.cluster.seeds) {
    seeds += (seeds.empty() ? "" : ", ") + host + ":" + std::to_string(port);
  }
  return std::string(config.cluster.tls ? "redis cluster (TLS; " : "redis cluster (") + seeds + ")";
}

milliseconds ConnectTimeout(const config::StoreConfig& config) {
  return config.type == config::StoreType::kCluster ? config.cluster.connect_timeout
                                                    : config.redis.connect_timeout;
}

const std::optional<TlsOptions>& TlsOf(const config::StoreConfig& config) {
  return config.type == config::StoreType::kCluster ? config.cluster.tls : config.redis.tls;
}

// A store that talks to Redis: one server, a sentinel-named master or a cluster, on `io` or on
// a thread of its own.
template <typename S>
std::shared_ptr<S> MakeShared(const config::StoreConfig& config,
                              const std::shared_ptr<RedisCredentials>& credentials,
                              boost::asio::io_context* io) {
  if constexpr (std::is_same_v<S, RedisStore>) {
    return std::make_shared<S>(config.redis, credentials, io);
  } else {
    return std::make_shared<S>(config.cluster, credentials, io);
  }
}

// One store per io_context given (or one on its own thread when `ios` holds a null), all given
// up to the connect timeout together to become ready.
template <typename S>
OpenedStores OpenShared(const config::StoreConfig& config,
                        const std::shared_ptr<RedisCredentials>& credentials,
                        const std::vector<boost::asio::io_context*>& ios) {
  const std::optional<TlsOptions>& tls = TlsOf(config);
  if (tls && !tls->verify) {
    spdlog::warn("store tls.verify is false: the server's certificate and name are not checked");
  }
  std::vector<std::shared_ptr<S>> stores;
  stores.reserve(ios.size());
  for (boost::asio::io_context* io : ios) stores.push_back(MakeShared<S>(config, credentials, io));
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
  return {std::vector<std::shared_ptr<Store>>(stores.begin(), stores.end()), ready, credentials};
}

Result<OpenedStores> Open(const config::StoreConfig& config,
                          const std::vector<boost::asio::io_context*>& ios) {
  Result<std::shared_ptr<RedisCredentials>> credentials = LoadCredentials(config);
  if (!credentials.ok()) return credentials.status();
  switch (config.type) {
    case config::StoreType::kMemory:
      return OpenedStores{
          std::vector<std::shared_ptr<Store>>(
              ios.size(), std::make_shared<MemoryStore>(nullptr, config.max_buckets)),
          [] { return true; }, nullptr};
    case config::StoreType::kRedis:
    case config::StoreType::kSentinel:
      return OpenShared<RedisStore>(config, *credentials, ios);
    case config::StoreType::kCluster:
      return OpenShared<ClusterStore>(config, *credentials, ios);
  }
  return Status::InvalidArgument("unknown store type");
}

}  // namespace

Result<std::shared_ptr<RedisCredentials>> LoadCredentials(const config::StoreConfig& config) {
  switch (config.type) {
    case config::StoreType::kMemory:
      return std::shared_ptr<RedisCredentials>();
    case config::StoreType::kRedis:
    case config::StoreType::kSentinel:
      return RedisCredentials::Load(config.redis);
    case config::StoreType::kCluster:
      return RedisCredentials::Load(config.cluster);
  }
  return std::shared_ptr<RedisCredentials>();
}

Result<OpenedStore> OpenStore(const config::StoreConfig& config) {
  Result<OpenedStores> opened = Open(config, {nullptr});
  if (!opened.ok()) return opened.status();
  return OpenedStore{opened->stores.front(), opened->ready};
}

Result<std::shared_ptr<PostgresQuotaStore>> OpenQuotaStore(const config::QuotaStoreConfig& config) {
  auto store = std::make_shared<PostgresQuotaStore>(config.postgres);
  const Status ready = store->WaitReady(config.postgres.connect_timeout);
  if (ready.code() == StatusCode::kFailedPrecondition || store->refused()) {
    return Status(ready.code(), "quota_store: " + ready.message());
  }
  if (!ready.ok()) {
    spdlog::warn("{}; durable rules follow quota_store.failure until it answers", ready.message());
  }
  return store;
}

Result<OpenedStores> OpenStores(const config::StoreConfig& config, http::EventLoops& loops) {
  std::vector<boost::asio::io_context*> ios;
  for (size_t i = 0; i < loops.size(); ++i) ios.push_back(&loops[i]);
  return Open(config, ios);
}

}  // namespace sluice::cli
