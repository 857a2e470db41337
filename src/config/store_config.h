// `store:` of the configuration: where the shared buckets live.
#pragma once

#include <chrono>
#include <cstddef>

#include "config/yaml_field.h"
#include "sluice/cluster_store.h"
#include "sluice/memory_store.h"
#include "sluice/redis_store.h"

namespace sluice::config {

enum class StoreType { kMemory, kRedis, kSentinel, kCluster };

struct StoreConfig {
  StoreType type = StoreType::kMemory;
  // For kRedis: from `url`, the credentials, `tls`, `mode`, `timeout`, ...; for kSentinel the
  // same, with `sentinel` from `sentinels`, `master` and the sentinels' credentials.
  RedisOptions redis;
  ClusterOptions cluster;  // for kCluster: from `nodes`, the credentials, `tls`, `mode`, ...
  // `max_buckets`: the most a memory store holds, and on any store the most buckets of synced
  // and leased rules counted in this process.
  size_t max_buckets = MemoryStore::kDefaultMaxBuckets;

  bool operator==(const StoreConfig&) const = default;
};

// A check's time limit on the store: its `timeout`, or 0 for the memory store.
std::chrono::milliseconds StoreTimeout(const StoreConfig& store);

// `store: {type: memory | redis | sentinel | cluster, ...}`. A field that another type takes is
// refused, naming the types that take it; credentials have one source each (URL, value or file).
StoreConfig ParseStore(const YamlField& f);

}  // namespace sluice::config
