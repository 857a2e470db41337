#include "stores/quota_store_kind.h"

#include <algorithm>

namespace sluice::stores {

const std::vector<QuotaStoreKind>& QuotaStoreKinds() {
  static const std::vector<QuotaStoreKind> kinds = {
      PostgresQuotaStoreKind(),
  };
  return kinds;
}

const QuotaStoreKind* FindQuotaStoreKind(std::string_view type) {
  const std::vector<QuotaStoreKind>& kinds = QuotaStoreKinds();
  const auto kind = std::find_if(kinds.begin(), kinds.end(),
                                 [&](const QuotaStoreKind& k) { return k.type == type; });
  return kind == kinds.end() ? nullptr : &*kind;
}

const QuotaStoreKind* QuotaStoreKindForUrl(std::string_view url) {
  for (const QuotaStoreKind& kind : QuotaStoreKinds()) {
    for (std::string_view scheme : kind.url_schemes) {
      if (url.starts_with(scheme)) return &kind;
    }
  }
  return nullptr;
}

}  // namespace sluice::stores
