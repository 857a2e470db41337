// The embedded store: buckets in this process's memory, for a single gateway or for tests.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "sluice/clock.h"
#include "sluice/store.h"

namespace sluice {

// Keeps buckets in memory with the same semantics and arithmetic as the Redis script. A bucket
// is forgotten once it would be full again, as the script's key expiry does: every operation
// also removes a few expired buckets, oldest first, so memory stays bounded by the buckets that
// are not yet full, with no cleanup thread. Thread-safe; buckets are spread over shards, each
// with its own lock. Apply completes inline, on the caller's thread.
class MemoryStore final : public Store {
 public:
  // `clock` supplies the time (a SteadyClock when null).
  explicit MemoryStore(std::shared_ptr<const Clock> clock = nullptr);
  ~MemoryStore() override;

  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;

  void Apply(std::vector<BucketOp> ops, StoreCallback done) override;
  // Locks every shard the ops touch, so the ops are decided and charged as one step.
  void ApplyAllOrNothing(std::vector<BucketOp> ops, StoreCallback done) override;

  // The number of buckets held now, expired or not yet swept.
  size_t BucketCount() const;

 private:
  class Shard;

  size_t ShardIndex(const std::string& key) const;

  std::shared_ptr<const Clock> clock_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace sluice
