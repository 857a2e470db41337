// The options a store kind read from `store:`, which only the tests of that reading look at.
#pragma once

#include "config/store_config.h"
#include "stores/cluster/cluster_kind.h"
#include "stores/redis/redis_kind.h"

namespace sluice::config {

inline const RedisOptions& RedisOf(const StoreConfig& store) {
  return dynamic_cast<const stores::RedisSettings&>(*store.settings).options();
}

inline const ClusterOptions& ClusterOf(const StoreConfig& store) {
  return dynamic_cast<const stores::ClusterSettings&>(*store.settings).options();
}

}  // namespace sluice::config
