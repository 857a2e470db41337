#include "stores/quota_store_kind.h"

#include "common/registry.h"

namespace sluice::stores {

const std::vector<QuotaStoreKind>& QuotaStoreKinds() {
  static const std::vector<QuotaStoreKind> kinds = {
      PostgresQuotaStoreKind(),
  };
  return kinds;
}

const QuotaStoreKind* FindQuotaStoreKind(std::string_view type) {
  return FindNamed(QuotaStoreKinds(), &QuotaStoreKind::type, type);
}

const QuotaStoreKind* QuotaStoreKindForUrl(std::string_view url) {
  return FindByScheme(QuotaStoreKinds(), url);
}

}  // namespace sluice::stores
