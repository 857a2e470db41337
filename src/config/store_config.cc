#include "config/store_config.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "common/registry.h"
#include "config/schema.h"

namespace sluice::config {
namespace {

bool Takes(const stores::StoreKind& kind, std::string_view field) {
  return field == "max_buckets" ||
         std::find(kind.fields.begin(), kind.fields.end(), field) != kind.fields.end();
}

// Refuses a field that `kind` does not take, naming the kinds that do.
void RefuseForeignFields(const YamlField& f, const stores::StoreKind& kind) {
  for (std::string_view field : KeysOf("store")) {
    const std::string name(field);
    if (field == "type" || !f.Has(name) || Takes(kind, field)) continue;
    std::vector<std::string_view> takers;
    for (const stores::StoreKind& other : stores::StoreKinds()) {
      if (Takes(other, field)) takers.push_back(other.type);
    }
    std::string list;
    for (size_t i = 0; i < takers.size(); ++i) {
      list += (i == 0 ? "" : i + 1 == takers.size() ? " or " : ", ") + std::string(takers[i]);
    }
    f[name].Fail("applies only to a " + list + " store");
  }
}

const stores::StoreKind& KindOf(const YamlField& f) {
  if (!f.Has("type")) return stores::StoreKinds().front();
  return *stores::FindStoreKind(
      f["type"].OneOf(NamesOf(stores::StoreKinds(), &stores::StoreKind::type)));
}

}  // namespace

StoreConfig ParseStore(const YamlField& f) {
  f.ExpectMap(KeysOf("store"));
  const stores::StoreKind& kind = KindOf(f);
  RefuseForeignFields(f, kind);
  StoreConfig store;
  store.type = std::string(kind.type);
  if (f.Has("max_buckets")) {
    store.max_buckets = static_cast<size_t>(f["max_buckets"].Integer(1, 1'000'000'000));
  }
  store.settings = kind.parse(f);
  return store;
}

}  // namespace sluice::config
