#include "sluice/memory_store.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "sluice/bucket.h"

namespace sluice {
namespace {

constexpr size_t kShards = 16;
// Expired buckets removed per operation. Above one, removal outpaces creation, so the map never
// holds many more buckets than are not yet full, whatever the access pattern.
constexpr size_t kSweepPerOp = 8;

}  // namespace

// One lock's worth of buckets, with an index of expiry times to forget full buckets and, at the
// shard's bound, the nearest to full. Callers hold the shard's lock (Lock) around Sweep, Take and
// Keep.
class MemoryStore::Shard {
 public:
  explicit Shard(size_t max_buckets) : max_buckets_(max_buckets) {}

  std::unique_lock<std::mutex> Lock() { return std::unique_lock(mutex_); }

  // Forgets a few buckets whose time has come.
  void Sweep(int64_t now_ms) {
    for (size_t n = 0; n < kSweepPerOp && !by_expiry_.empty(); ++n) {
      auto oldest = by_expiry_.begin();
      if (oldest->first > now_ms) break;
      Erase(buckets_.find(*oldest->second));
    }
  }

  // What taking `cost` from the op's bucket would give; changes nothing.
  TakeOutcome Take(const BucketOp& op, int64_t cost, int64_t now_ms) const {
    auto it = buckets_.find(op.key);
    std::optional<BucketState> state;
    if (it != buckets_.end() && it->second.expires_ms > now_ms) state = it->second.state;
    if (op.up_to) return TakeTokensUpTo(state, op.limit, cost, now_ms);
    if (op.debt) return TakeTokensInDebt(state, op.limit, cost, now_ms);
    return TakeFromBucket(op.algorithm, state, op.limit, cost, now_ms);
  }

  // Keeps `out` as the bucket's new state (or forgets the bucket when it is full).
  void Keep(const std::string& key, const TakeOutcome& out, int64_t now_ms) {
    auto it = buckets_.find(key);
    if (out.ttl_ms <= 0) {
      if (it != buckets_.end()) Erase(it);
      return;
    }
    if (it == buckets_.end()) {
      if (buckets_.size() >= max_buckets_) EvictNearestToFull();
      it = buckets_.try_emplace(key).first;
    } else {
      by_expiry_.erase(it->second.expiry_entry);
    }
    it->second.state = out.state;
    it->second.expires_ms = now_ms + out.ttl_ms;
    it->second.expiry_entry = by_expiry_.emplace(it->second.expires_ms, &it->first);
  }

  size_t Size() const {
    std::lock_guard lock(mutex_);
    return buckets_.size();
  }

  uint64_t Evictions() const { return evictions_.load(std::memory_order_relaxed); }

 private:
  using ExpiryIndex = std::multimap<int64_t, const std::string*>;
  struct Bucket {
    BucketState state;
    int64_t expires_ms = 0;
    ExpiryIndex::iterator expiry_entry;
  };
  using Buckets = std::unordered_map<std::string, Bucket>;

  // The soonest to expire is the nearest to full: forgetting it loses the least.
  void EvictNearestToFull() {
    Erase(buckets_.find(*by_expiry_.begin()->second));
    evictions_.fetch_add(1, std::memory_order_relaxed);
  }

  void Erase(Buckets::iterator it) {
    by_expiry_.erase(it->second.expiry_entry);
    buckets_.erase(it);
  }

  const size_t max_buckets_;
  std::atomic<uint64_t> evictions_{0};
  mutable std::mutex mutex_;
  Buckets buckets_;        // node-based: key addresses stay valid for the index
  ExpiryIndex by_expiry_;  // soonest expiry first
};

MemoryStore::MemoryStore(std::shared_ptr<const Clock> clock, size_t max_buckets)
    : clock_(clock ? std::move(clock) : std::make_shared<SteadyClock>()) {
  // Each shard its share (one at least, so a bound under the shard count holds one a shard).
  const size_t per_shard = std::max<size_t>(1, max_buckets / kShards);
  for (size_t i = 0; i < kShards; ++i) shards_.push_back(std::make_unique<Shard>(per_shard));
}

MemoryStore::~MemoryStore() = default;

size_t MemoryStore::ShardIndex(const std::string& key) const {
  return std::hash<std::string>{}(key) % shards_.size();
}

void MemoryStore::Apply(std::vector<BucketOp> ops, StoreCallback done) {
  if (Status s = ValidateBucketOps(ops); !s.ok()) return done(s);
  const int64_t now_ms = clock_->NowMs();
  std::vector<BucketReply> replies;
  replies.reserve(ops.size());
  for (const BucketOp& op : ops) {
    Shard& shard = *shards_[ShardIndex(op.key)];
    auto lock = shard.Lock();
    shard.Sweep(now_ms);
    TakeOutcome out = shard.Take(op, op.cost, now_ms);
    shard.Keep(op.key, out, now_ms);
    replies.push_back(out.reply);
  }
  done(std::move(replies));
}

void MemoryStore::ApplyAllOrNothing(std::vector<BucketOp> ops, StoreCallback done) {
  if (Status s = ValidateBucketOps(ops); !s.ok()) return done(s);
  const int64_t now_ms = clock_->NowMs();
  // Every shard the ops touch, locked in index order so that two such calls cannot deadlock.
  std::vector<size_t> touched;
  touched.reserve(ops.size());
  for (const BucketOp& op : ops) touched.push_back(ShardIndex(op.key));
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  locks.reserve(touched.size());
  for (size_t index : touched) locks.push_back(shards_[index]->Lock());

  std::vector<TakeOutcome> outcomes;
  outcomes.reserve(ops.size());
  bool charge = true;
  for (const BucketOp& op : ops) {
    outcomes.push_back(shards_[ShardIndex(op.key)]->Take(op, op.cost, now_ms));
    if (op.enforced && !outcomes.back().reply.allowed) charge = false;
  }
  std::vector<BucketReply> replies;
  replies.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    Shard& shard = *shards_[ShardIndex(ops[i].key)];
    if (charge) {
      shard.Keep(ops[i].key, outcomes[i], now_ms);
    } else {
      const BucketReply untouched = shard.Take(ops[i], 0, now_ms).reply;
      outcomes[i].reply.remaining = untouched.remaining;
      outcomes[i].reply.reset_ms = untouched.reset_ms;
    }
    replies.push_back(outcomes[i].reply);
  }
  locks.clear();
  done(std::move(replies));
}

uint64_t MemoryStore::Evictions() const {
  uint64_t evictions = 0;
  for (const auto& shard : shards_) evictions += shard->Evictions();
  return evictions;
}

size_t MemoryStore::BucketCount() const {
  size_t count = 0;
  for (const auto& shard : shards_) count += shard->Size();
  return count;
}

}  // namespace sluice
