#include "sluice/memory_store.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>

#include "sluice/bucket.h"
#include "sluice/mutex.h"

namespace sluice {
namespace {

constexpr size_t kShards = 16;
// Expired buckets removed per operation. Above one, removal outpaces creation, so the map never
// holds many more buckets than are not yet full, whatever the access pattern.
constexpr size_t kSweepPerOp = 8;

}  // namespace

// One lock's worth of buckets, with an index of expiry times to forget full buckets and, at the
// shard's bound, the nearest to full. Callers hold the shard's lock (Lock) around Sweep, Take and
// Keep: several shards' at once for an all-or-nothing call.
class MemoryStore::Shard {
 public:
  explicit Shard(size_t max_buckets) : max_buckets_(max_buckets) {}

  void Lock() SLUICE_ACQUIRE(mutex_) { mutex_.Lock(); }
  void Unlock() SLUICE_RELEASE(mutex_) { mutex_.Unlock(); }
  // Where shards are locked as a set (LockAll), each use asserts its own is held.
  void AssertHeld() const SLUICE_ASSERT_CAPABILITY(mutex_) { mutex_.AssertHeld(); }

  // Locks (unlocks) every shard of `shards`, in that order. A set of locks known only at run
  // time, which the analysis cannot follow: their users assert each lock held instead.
  static void LockAll(const std::vector<Shard*>& shards) SLUICE_NO_THREAD_SAFETY_ANALYSIS {
    for (Shard* shard : shards) shard->Lock();
  }
  static void UnlockAll(const std::vector<Shard*>& shards) SLUICE_NO_THREAD_SAFETY_ANALYSIS {
    for (Shard* shard : shards) shard->Unlock();
  }

  // Forgets a few buckets whose time has come.
  void Sweep(int64_t now_ms) SLUICE_REQUIRES(mutex_) {
    for (size_t n = 0; n < kSweepPerOp && !by_expiry_.empty(); ++n) {
      auto oldest = by_expiry_.begin();
      if (oldest->first > now_ms) break;
      Erase(buckets_.find(*oldest->second));
    }
  }

  // What taking `cost` from the op's bucket would give; changes nothing.
  TakeOutcome Take(const BucketOp& op, int64_t cost, int64_t now_ms) const SLUICE_REQUIRES(mutex_) {
    auto it = buckets_.find(op.key);
    std::optional<BucketState> state;
    if (it != buckets_.end() && it->second.expires_ms > now_ms) state = it->second.state;
    if (op.up_to) return TakeTokensUpTo(state, op.limit, cost, now_ms);
    if (op.debt) return TakeTokensInDebt(state, op.limit, cost, now_ms);
    return TakeFromBucket(op.algorithm, state, op.limit, cost, now_ms);
  }

  // Keeps `out` as the bucket's new state (or forgets the bucket when it is full).
  void Keep(const std::string& key, const TakeOutcome& out, int64_t now_ms)
      SLUICE_REQUIRES(mutex_) {
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

  size_t Size() const SLUICE_EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
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
  void EvictNearestToFull() SLUICE_REQUIRES(mutex_) {
    Erase(buckets_.find(*by_expiry_.begin()->second));
    evictions_.fetch_add(1, std::memory_order_relaxed);
  }

  void Erase(Buckets::iterator it) SLUICE_REQUIRES(mutex_) {
    by_expiry_.erase(it->second.expiry_entry);
    buckets_.erase(it);
  }

  const size_t max_buckets_;
  std::atomic<uint64_t> evictions_{0};
  mutable Mutex mutex_;
  Buckets buckets_ SLUICE_GUARDED_BY(mutex_);  // node-based: key addresses stay valid for the index
  ExpiryIndex by_expiry_ SLUICE_GUARDED_BY(mutex_);  // soonest expiry first
};

MemoryStore::MemoryStore(std::shared_ptr<const Clock> clock, size_t max_buckets)
    : clock_(ClockOrSteady(std::move(clock))) {
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
    shard.Lock();
    shard.Sweep(now_ms);
    TakeOutcome out = shard.Take(op, op.cost, now_ms);
    shard.Keep(op.key, out, now_ms);
    shard.Unlock();
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
  std::vector<Shard*> locked;
  locked.reserve(touched.size());
  for (size_t index : touched) locked.push_back(shards_[index].get());
  Shard::LockAll(locked);

  std::vector<TakeOutcome> outcomes;
  outcomes.reserve(ops.size());
  bool charge = true;
  for (const BucketOp& op : ops) {
    const Shard& shard = *shards_[ShardIndex(op.key)];
    shard.AssertHeld();
    outcomes.push_back(shard.Take(op, op.cost, now_ms));
    if (op.enforced && !outcomes.back().reply.allowed) charge = false;
  }
  std::vector<BucketReply> replies;
  replies.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    Shard& shard = *shards_[ShardIndex(ops[i].key)];
    shard.AssertHeld();
    if (charge) {
      shard.Keep(ops[i].key, outcomes[i], now_ms);
    } else {
      const BucketReply untouched = shard.Take(ops[i], 0, now_ms).reply;
      outcomes[i].reply.remaining = untouched.remaining;
      outcomes[i].reply.reset_ms = untouched.reset_ms;
    }
    replies.push_back(outcomes[i].reply);
  }
  Shard::UnlockAll(locked);
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
