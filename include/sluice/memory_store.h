// The embedded store: buckets in this process's memory, for a single gateway or for tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "sluice/clock.h"
#include "sluice/store.h"

namespace sluice {

// Keeps buckets in memory with the same semantics and arithmetic as the Redis script. A bucket
// is forgotten once it would be full again, as the script's key expiry does: every operation
// also removes a few expired buckets, oldest first, with no cleanup thread. At most
// `max_buckets` are held, whatever the number of distinct clients: past it, the bucket nearest
// to full (the soonest to expire) is forgotten to make room, the least information lost, since
// a forgotten bucket is a full one (as Redis's maxmemory-policy volatile-ttl does). Thread-safe;
// buckets are spread over shards, each with its own lock and its share of the bound. Apply
// completes inline, on the caller's thread.
class MemoryStore final : public Store {
 public:
  static constexpr size_t kDefaultMaxBuckets = sluice::kDefaultMaxBuckets;

  // `clock` supplies the time (a SteadyClock when null); `max_buckets` (at least 1) bounds the
  // buckets held.
  explicit MemoryStore(std::shared_ptr<const Clock> clock = nullptr,
                       size_t max_buckets = kDefaultMaxBuckets);
  ~MemoryStore() override;

  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;

  void Apply(std::vector<BucketOp> ops, StoreCallback done) override;
  // Locks every shard the ops touch, so the ops are decided and charged as one step.
  void ApplyAllOrNothing(std::vector<BucketOp> ops, StoreCallback done) override;

  // The number of buckets held now, expired or not yet swept.
  size_t BucketCount() const;

  // Buckets forgotten before they were full, to stay within max_buckets.
  uint64_t Evictions() const;
  std::optional<uint64_t> BucketsForgotten() const override { return Evictions(); }

 private:
  class Shard;

  size_t ShardIndex(const std::string& key) const;

  std::shared_ptr<const Clock> clock_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace sluice
