// The buckets a LocalCountingStore keeps, one a key, and at most a bound of them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "gather.h"
#include "sluice/rule.h"

namespace sluice::local {

inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

inline double PerMs(const Limit& limit) {
  return static_cast<double>(limit.tokens) / static_cast<double>(limit.period_ms);
}

// A check waiting for a lease in flight.
struct Waiter {
  std::shared_ptr<Gather> gather;
  size_t index = 0;
  int64_t cost = 0;
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
// bucket forgotten is taken as full when next seen); the others are never forgotten. Not
// thread-safe: the store's lock guards it (evictions() aside).
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
  std::atomic<uint64_t> evictions_{0};
};

}  // namespace sluice::local
