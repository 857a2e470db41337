// `store:` of the configuration: where the shared buckets live.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "config/yaml_field.h"
#include "sluice/store.h"
#include "stores/store_kind.h"

namespace sluice::config {

struct StoreConfig {
  std::string type = "memory";  // `type`: a kind of stores::StoreKinds()
  // Its other fields, as its kind read them.
  std::shared_ptr<const stores::StoreSettings> settings = stores::DefaultStoreSettings();
  // `max_buckets`: the most a memory store holds, and on any store the most buckets of synced
  // and leased rules counted in this process.
  size_t max_buckets = kDefaultMaxBuckets;

  bool operator==(const StoreConfig& other) const {
    return type == other.type && max_buckets == other.max_buckets &&
           settings->Equals(*other.settings);
  }
};

// `store: {type: memory | redis | sentinel | cluster, ...}`. A field that another type takes is
// refused, naming the types that take it.
StoreConfig ParseStore(const YamlField& f);

}  // namespace sluice::config
