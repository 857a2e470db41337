#include "sluice/memory_store.h"

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "sluice/gcra.h"

namespace sluice {
namespace {

constexpr size_t kShards = 16;
// Expired buckets removed per operation. Above one, removal outpaces creation, so the map never
// holds many more buckets than are not yet full, whatever the access pattern.
constexpr size_t kSweepPerOp = 8;

}  // namespace

// One lock's worth of buckets, with an index of expiry times to forget full buckets.
class MemoryStore::Shard {
 public:
  BucketReply Take(const BucketOp& op, int64_t now_ms) {
    std::lock_guard lock(mutex_);
    SweepExpired(now_ms);
    auto it = buckets_.find(op.key);
    std::optional<BucketState> state;
    if (it != buckets_.end() && it->second.expires_ms > now_ms) state = it->second.state;

    TakeOutcome out = op.algorithm == Algorithm::kGcra
                          ? TakeGcra(state ? std::optional<double>(state->tat_ms) : std::nullopt,
                                     op.limit, op.cost, now_ms)
                          : TakeTokens(state, op.limit, op.cost, now_ms);
    if (out.ttl_ms <= 0) {
      if (it != buckets_.end()) Erase(it);
      return out.reply;
    }
    if (it == buckets_.end()) {
      it = buckets_.try_emplace(op.key).first;
    } else {
      by_expiry_.erase(it->second.expiry_entry);
    }
    it->second.state = out.state;
    it->second.expires_ms = now_ms + out.ttl_ms;
    it->second.expiry_entry = by_expiry_.emplace(it->second.expires_ms, &it->first);
    return out.reply;
  }

  size_t Size() const {
    std::lock_guard lock(mutex_);
    return buckets_.size();
  }

 private:
  using ExpiryIndex = std::multimap<int64_t, const std::string*>;
  struct Bucket {
    BucketState state;
    int64_t expires_ms = 0;
    ExpiryIndex::iterator expiry_entry;
  };
  using Buckets = std::unordered_map<std::string, Bucket>;

  void Erase(Buckets::iterator it) {
    by_expiry_.erase(it->second.expiry_entry);
    buckets_.erase(it);
  }

  void SweepExpired(int64_t now_ms) {
    for (size_t n = 0; n < kSweepPerOp && !by_expiry_.empty(); ++n) {
      auto oldest = by_expiry_.begin();
      if (oldest->first > now_ms) break;
      Erase(buckets_.find(*oldest->second));
    }
  }

  mutable std::mutex mutex_;
  Buckets buckets_;        // node-based: key addresses stay valid for the index
  ExpiryIndex by_expiry_;  // soonest expiry first
};

MemoryStore::MemoryStore(std::shared_ptr<const Clock> clock)
    : clock_(clock ? std::move(clock) : std::make_shared<SteadyClock>()) {
  for (size_t i = 0; i < kShards; ++i) shards_.push_back(std::make_unique<Shard>());
}

MemoryStore::~MemoryStore() = default;

MemoryStore::Shard& MemoryStore::ShardFor(const std::string& key) {
  return *shards_[std::hash<std::string>{}(key) % shards_.size()];
}

void MemoryStore::Apply(std::vector<BucketOp> ops, StoreCallback done) {
  if (Status s = ValidateBucketOps(ops); !s.ok()) return done(s);
  const int64_t now_ms = clock_->NowMs();
  std::vector<BucketReply> replies;
  replies.reserve(ops.size());
  for (const BucketOp& op : ops) replies.push_back(ShardFor(op.key).Take(op, now_ms));
  done(std::move(replies));
}

size_t MemoryStore::BucketCount() const {
  size_t count = 0;
  for (const auto& shard : shards_) count += shard->Size();
  return count;
}

}  // namespace sluice
