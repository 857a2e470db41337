#include "local_buckets.h"

#include <algorithm>
#include <cmath>

namespace sluice::local {

int64_t MsUntil(double tokens_short, const Limit& limit) {
  return static_cast<int64_t>(std::ceil(tokens_short / PerMs(limit)));
}

double LocalBucket::RefilledTokens(int64_t now) const {
  return std::min(
      static_cast<double>(limit.capacity),
      tokens + static_cast<double>(std::max<int64_t>(0, now - tokens_ms)) * PerMs(limit));
}

bool LocalBucket::Settled() const {
  return unsent == 0 && !syncing && held == 0 && !leasing && waiters.empty();
}

int64_t LocalBucket::FullMs() const {
  if (counting.mode != Counting::kSynced) return dry_until_ms;
  const double short_of_full = std::max(0.0, static_cast<double>(limit.capacity) - tokens);
  return tokens_ms + static_cast<int64_t>(std::ceil(short_of_full / PerMs(limit)));
}

bool LocalBuckets::MakeRoom(size_t fresh, const std::vector<const std::string*>& keep) {
  if (HasRoom(fresh)) return true;
  const size_t needed = map_.size() + fresh - max_;
  std::vector<const std::string*> forget;
  for (auto it = settled_.begin(); it != settled_.end() && forget.size() < needed; ++it) {
    if (std::find(keep.begin(), keep.end(), it->second) == keep.end()) forget.push_back(it->second);
  }
  if (forget.size() < needed) return false;
  for (const std::string* key : forget) Erase(map_.find(*key));
  evictions_.fetch_add(needed, std::memory_order_relaxed);
  return true;
}

bool LocalBuckets::MakeRoomFor(const std::vector<BucketOp>& local_ops) {
  size_t fresh = 0;
  for (auto op = local_ops.begin(); op != local_ops.end(); ++op) {
    if (Find(op->key) != end()) continue;
    const bool named_before = std::any_of(
        local_ops.begin(), op, [&](const BucketOp& earlier) { return earlier.key == op->key; });
    if (!named_before) ++fresh;
  }
  if (HasRoom(fresh)) return true;
  std::vector<const std::string*> keep;  // the buckets these ops name: not to be forgotten
  for (const BucketOp& op : local_ops) {
    if (auto it = Find(op.key); it != end()) keep.push_back(&it->first);
  }
  return MakeRoom(fresh, keep);
}

LocalBuckets::Map::iterator LocalBuckets::Use(const BucketOp& op, int64_t now) {
  auto [it, fresh] = Emplace(op.key);
  LocalBucket& b = it->second;
  if (fresh) {
    // Never seen: taken as full until the first sync, which is due at once, says otherwise.
    b.tokens = static_cast<double>(op.limit.capacity);
    b.tokens_ms = now;
    b.next_sync_ms = now;
    DueAt(now);
  }
  b.limit = op.limit;
  b.counting = op.counting;
  b.last_used_ms = now;
  return it;
}

std::pair<LocalBuckets::Map::iterator, bool> LocalBuckets::Emplace(const std::string& key) {
  return map_.try_emplace(key);
}

LocalBuckets::Map::iterator LocalBuckets::Erase(Map::iterator it) {
  Unfile(it->second);
  return map_.erase(it);
}

void LocalBuckets::Refile(Map::iterator it) {
  LocalBucket& b = it->second;
  if (!b.Settled()) return Unfile(b);
  const int64_t full_ms = b.FullMs();
  if (b.filed && b.settled_entry->first == full_ms) return;
  Unfile(b);
  b.settled_entry = settled_.emplace(full_ms, &it->first);
  b.filed = true;
}

void LocalBuckets::Unfile(LocalBucket& b) {
  if (!b.filed) return;
  settled_.erase(b.settled_entry);
  b.filed = false;
}

}  // namespace sluice::local
