#include "open_store.h"

namespace sluice::cli {

Result<OpenedStore> OpenStore(const config::StoreConfig& config) {
  Result<OpenedStores> opened = config.settings->Open({nullptr}, config.max_buckets);
  if (!opened.ok()) return opened.status();
  return OpenedStore{opened->stores.front(), opened->ready};
}

Result<OpenedStores> OpenStores(const config::StoreConfig& config, http::EventLoops& loops) {
  std::vector<boost::asio::io_context*> ios;
  for (size_t i = 0; i < loops.size(); ++i) ios.push_back(&loops[i]);
  return config.settings->Open(ios, config.max_buckets);
}

}  // namespace sluice::cli
