#include "stores/store_kind.h"

#include "common/registry.h"
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
  return FindNamed(StoreKinds(), &StoreKind::type, type);
}

const StoreKind* StoreKindForUrl(std::string_view url) {
  if (const StoreKind* kind = FindByScheme(StoreKinds(), url)) return kind;
  const StoreKind* named = FindStoreKind(url);
  return named != nullptr && named->url_schemes.empty() ? named : nullptr;
}

std::shared_ptr<const StoreSettings> DefaultStoreSettings() {
  static const std::shared_ptr<const StoreSettings> settings =
      config::ReadYamlDocument<std::shared_ptr<const StoreSettings>>("{}", "the default store", {},
                                                                     StoreKinds().front().parse)
          .value();
  return settings;
}

}  // namespace sluice::stores
