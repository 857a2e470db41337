#include "open_store.h"

#include <spdlog/spdlog.h>

namespace sluice::cli {

Result<OpenedStore> OpenStore(const config::StoreConfig& config) {
  Result<OpenedStores> opened = config.settings->Open({nullptr}, config.max_buckets);
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
  return config.settings->Open(ios, config.max_buckets);
}

}  // namespace sluice::cli
