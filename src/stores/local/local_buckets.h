// The shared core of a LocalCountingStore's two modes (synced_counts.h, leased_counts.h): the
// buckets it keeps, one a key and at most a bound of them, when one next needs attention, and
// the calls it makes to the shared store for them.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "reply_join.h"
#include "sluice/rule.h"
#include "sluice/store.h"

namespace sluice::local {

inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

inline double PerMs(const Limit& limit) {
  return static_cast<double>(limit.tokens) / static_cast<double>(limit.period_ms);
}

// How long the limit takes to refill `tokens_short`, rounded up.
int64_t MsUntil(double tokens_short, const Limit& limit);

// Rounds `ms` up to a multiple of `step`: syncs of one interval, and lease expiries, fall on
// the same ticks, so that a tick sends them together and most ticks find nothing due.
inline int64_t RoundUp(int64_t ms, int64_t step) { return (ms / step + 1) * step; }

// An op waiting for a lease in flight: its Apply's join, and its position there.
struct Waiter {
  std::shared_ptr<stores::ReplyJoin> join;
  size_t position = 0;
  int64_t cost = 0;
};

// A call to the shared store made for one local bucket, and why.
struct Errand {
  // kOwed: counts flushed while the bucket's sync was out, whose answer changes nothing here.
  enum class Kind { kSync, kLease, kReturn, kOwed } kind;
  std::string key;
};

// Calls to make to the shared store, each op with its errand.
struct Errands {
  std::vector<BucketOp> ops;
  std::vector<Errand> errands;

  void Add(BucketOp op, Errand::Kind kind, const std::string& key) {
    ops.push_back(std::move(op));
    errands.push_back({kind, key});
  }
};

// What the local counts have done, counted without a lock (LocalCountingStats).
struct Counters {
  std::atomic<uint64_t> local_decisions{0}, store_calls{0}, sync_calls{0}, lease_calls{0},
      tokens_leased{0}, tokens_returned{0}, sync_failures{0}, refusals{0};
};

// Settled buckets by the time each is full again (FullMs), soonest first.
using SettledIndex = std::multimap<int64_t, const std::string*>;

// One bucket as this gateway sees it.
struct LocalBucket {
  Limit limit;
  LocalCounting counting;
  int64_t last_used_ms = 0;

  // Synced: the bucket's tokens as this gateway reckons them at tokens_ms (the last sync's
  // answer, less what was admitted since, refilled at the limit's rate), and the counts owed to
  // the store: admitted since the last sync was sent (unsent) and carried by the sync in flight
  // (sending). Owed counts survive a store that is down; the tokens go on refilling meanwhile.
  double tokens = 0;
  int64_t tokens_ms = 0;
  int64_t unsent = 0;
  int64_t sending = 0;
  bool syncing = false;
  int64_t next_sync_ms = 0;

  // Leased: tokens held, until lease_expires_ms; checks waiting for the lease in flight.
  int64_t held = 0;
  int64_t lease_expires_ms = kNever;
  bool leasing = false;
  std::vector<Waiter> waiters;
  int64_t lease_taken_ms = -1;  // when the last lease was asked for
  int64_t lease_asked = 0;      // and how many tokens it asked for
  // A lease that came back short found the shared bucket dry: until it has had time to refill
  // what was asked (at most one lease ttl), checks short of tokens are rejected here rather than
  // each asking the store for the few tokens back meanwhile.
  int64_t dry_until_ms = 0;
  int64_t spent_since_lease = 0;

  // Where it is filed among the settled buckets, while it is.
  SettledIndex::iterator settled_entry;
  bool filed = false;

  double RefilledTokens(int64_t now) const;

  // Nothing owed to the store, held from it or asked of it: no count is lost by forgetting it.
  bool Settled() const;

  // When forgetting it will cost nothing: synced, when its tokens are reckoned full again;
  // leased (holding nothing), when the shared bucket will have refilled after running dry.
  int64_t FullMs() const;
};

// The buckets by key, at most `max_buckets` of them. Settled ones are also filed by FullMs, so
// that at the bound the one nearest to full can be forgotten, the least information lost (a
// bucket forgotten is taken as full when next seen); the others are never forgotten. Also when
// the soonest sync, lease expiry or bucket to forget is due. Not thread-safe: the store's lock
// guards it (evictions() aside).
class LocalBuckets {
 public:
  using Map = std::unordered_map<std::string, LocalBucket>;

  explicit LocalBuckets(size_t max_buckets) : max_(max_buckets < 1 ? 1 : max_buckets) {}

  Map::iterator Find(const std::string& key) { return map_.find(key); }
  Map::iterator begin() { return map_.begin(); }
  Map::iterator end() { return map_.end(); }
  size_t size() const { return map_.size(); }
  bool HasRoom(size_t fresh) const { return map_.size() + fresh <= max_; }

  // Makes room for `fresh` more buckets, forgetting settled ones nearest to full first but none
  // of `keep`. False, with nothing forgotten, when too few are settled: the rest owe the store.
  bool MakeRoom(size_t fresh, const std::vector<const std::string*>& keep);

  // Room for the buckets `local_ops` (all synced or leased) would make, forgetting settled ones
  // but none they name; false when every bucket held owes the store something, and these ops
  // must get the failure policy instead.
  bool MakeRoomFor(const std::vector<BucketOp>& local_ops);

  // The bucket `op` names, made (taken as full, its first sync due at once) when there is none,
  // with the op's limit and counting (a reloaded rule's apply at once), marked used at `now`.
  Map::iterator Use(const BucketOp& op, int64_t now);

  // Something is due at `ms`: the soonest of these is next_due_ms().
  void DueAt(int64_t ms) { next_due_ms_ = std::min(next_due_ms_, ms); }
  int64_t next_due_ms() const { return next_due_ms_; }
  // Nothing is due until DueAt says: before a walk over every bucket files each one's due time.
  void ClearDue() { next_due_ms_ = kNever; }

  // The bucket for `key`, made (unfiled) when there is none, and whether it was; call MakeRoom
  // first to stay within the bound.
  std::pair<Map::iterator, bool> Emplace(const std::string& key);

  // Forgets the bucket; the iterator after it.
  Map::iterator Erase(Map::iterator it);

  // Files the bucket among the settled, or takes it out, as it now is: after anything that may
  // change its Settled() or FullMs().
  void Refile(Map::iterator it);

  // Settled buckets forgotten by MakeRoom.
  uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }

 private:
  void Unfile(LocalBucket& b);

  const size_t max_;
  Map map_;  // node-based: a key's address stays valid for the index
  SettledIndex settled_;
  int64_t next_due_ms_ = kNever;
  std::atomic<uint64_t> evictions_{0};
};

}  // namespace sluice::local
