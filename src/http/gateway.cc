#include "http/gateway.h"

namespace sluice::http {

Gateway::Gateway(std::vector<std::shared_ptr<Store>> stores, std::function<bool()> ready,
                 std::shared_ptr<QuotaStore> quota_store, std::shared_ptr<const Clock> clock)
    : core_(std::move(stores), std::move(ready), std::move(quota_store), std::move(clock)) {}

void Gateway::FlushLocalCounts(const std::function<void()>& done) const {
  const std::shared_ptr<LocalCountingStore> local = Current()->local_counts;
  if (local == nullptr) return done();
  local->Flush(done);
}

}  // namespace sluice::http
