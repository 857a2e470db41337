#include "stores/store_kind.h"

#include <algorithm>

#include "config/yaml_field.h"

namespace sluice::stores {

const std::vector<StoreKind>& StoreKinds() {
  static const std::vector<StoreKind> kinds = {
      MemoryStoreKind(),
      RedisStoreKind(),
      SentinelStoreKind(),
      ClusterStoreKind(),
  };
  return kinds;
}

const StoreKind* FindStoreKind(std::string_view type) {
  const std::vector<StoreKind>& kinds = StoreKinds();
  const auto kind =
      std::find_if(kinds.begin(), kinds.end(), [&](const StoreKind& k) { return k.type == type; });
  return kind == kinds.end() ? nullptr : &*kind;
}

const StoreKind* StoreKindForUrl(std::string_view url) {
  for (const StoreKind& kind : StoreKinds()) {
    if (kind.url_schemes.empty() && url == kind.type) return &kind;
    for (std::string_view scheme : kind.url_schemes) {
      if (url.starts_with(scheme)) return &kind;
    }
  }
  return nullptr;
}

std::shared_ptr<const StoreSettings> DefaultStoreSettings() {
  static const std::shared_ptr<const StoreSettings> settings =
      config::ReadYamlDocument<std::shared_ptr<const StoreSettings>>("{}", "the default store", {},
                                                                     StoreKinds().front().parse)
          .value();
  return settings;
}

}  // namespace sluice::stores
