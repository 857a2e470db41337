// Local counts in front of a shared store: rules with `counting: synced` or `counting: leased`
// are decided in the gateway, and the shared store hears from it in batches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "sluice/clock.h"
#include "sluice/store.h"

namespace sluice {

// What a LocalCountingStore has done, for metrics and for measuring it.
struct LocalCountingStats {
  uint64_t local_decisions = 0;  // synced or leased ops decided without a store call
  uint64_t store_calls = 0;      // Apply calls made to the shared store, all kinds
  uint64_t sync_calls = 0;       // of which sent synced counts
  uint64_t lease_calls = 0;      // of which took leases
  uint64_t tokens_leased = 0;    // tokens the shared store granted as leases
  uint64_t tokens_returned = 0;  // unused leased tokens given back
  uint64_t sync_failures = 0;    // syncs the store failed; their counts are sent again later
  uint64_t evictions = 0;        // buckets forgotten at max_buckets, nearest to full first
  uint64_t refusals = 0;         // Apply calls failed at max_buckets, every bucket owing the store
};

// A Store that decides the ops of synced and leased rules (BucketOp::counting) in this process
// and passes every other op to `shared`, the store every gateway uses:
//
// - synced: a bucket's tokens are what the last sync said, less what this gateway admitted
//   since, refilled at the limit's rate. A bucket first seen is taken as full and synced at
//   once; after that, every sync interval (on the clock's interval boundaries, so that all of a
//   rule's buckets go together) the admitted counts go to the shared store as takes of up to
//   the count (BucketOp::up_to), one Apply a bucket (on Redis, written together: one pipeline),
//   and the replies are the tokens the next interval enforces from. If the store fails, checks
//   go on against this gateway's own reckoning and the counts are sent with a later sync (a
//   sync that timed out is not sent again: it may have been applied). Gateways may together
//   admit up to (gateways x the limit) more than the bucket between syncs.
// - leased: a check that finds no local tokens takes a lease of k tokens from the shared bucket
//   (a take of up to k, so it gets at most what is there), in the same Apply as the check's
//   shared ops; checks on that bucket wait for a lease in flight rather than take one each.
//   k follows this gateway's own rate on the bucket (enough for one lease ttl; one token when
//   idle), capped at lease_max_fraction of the capacity. Unused tokens go back when the lease
//   expires and when the store is destroyed. The gateways together never admit more than the
//   shared bucket alone would have.
//
// At most `max_buckets` buckets are held, whatever the number of distinct clients. Past it, a
// new bucket takes the place of one that owes the shared store nothing (no counts unsent, no
// leased tokens held, no call out), the one nearest to full: forgetting a bucket takes it as
// full when next seen, so that is the least information lost. Counts owed are never forgotten:
// when every bucket owes (a store down while a flood of distinct clients comes), an Apply that
// needs a new bucket fails with kResourceExhausted, and the limiter's failure policy decides.
//
// Refunds (negative costs) give tokens back locally. ApplyAllOrNothing passes calls without
// local ops through and answers kFailedPrecondition for others (the limiter then refunds).
// Thread-safe. A background thread sends due syncs and returns expired leases every few
// milliseconds, unless the store is made with `background` false: then the caller calls Tick.
// Through() gives more ways into the same counts, one per connection a process keeps (one per
// event loop, say), each sending its checks' calls through its own.
class LocalCountingStore final : public Store {
 public:
  static constexpr size_t kDefaultMaxBuckets = sluice::kDefaultMaxBuckets;

  // `clock` (a SteadyClock when null) times syncs and leases; the buckets' own clock stays the
  // shared store's. `max_buckets` (at least 1) bounds the buckets held.
  explicit LocalCountingStore(std::shared_ptr<Store> shared,
                              std::shared_ptr<const Clock> clock = nullptr, bool background = true,
                              size_t max_buckets = kDefaultMaxBuckets);
  // Sends what is counted and returns every lease, leases still in flight included when they
  // land, without waiting for the answers: the shared store must stay up to take them (call
  // Flush and wait for it first to be sure they arrived). A store made by Through() does none
  // of this: the one it came from does.
  ~LocalCountingStore() override;

  LocalCountingStore(const LocalCountingStore&) = delete;
  LocalCountingStore& operator=(const LocalCountingStore&) = delete;

  void Apply(std::vector<BucketOp> ops, StoreCallback done) override;
  void ApplyAllOrNothing(std::vector<BucketOp> ops, StoreCallback done) override;
  bool CountsLocally() const override { return true; }

  // Sends the synced counts that are due and returns the leases that have expired, in one
  // Apply to the shared store; `done` (optional) runs when it has answered, or at once when
  // there was nothing to send.
  void Tick(const std::function<void()>& done = nullptr);

  // Sends every synced count now and returns every lease's unused tokens; `done` as for Tick.
  void Flush(const std::function<void()>& done = nullptr);

  // A store that decides from these same local counts but sends its calls through `shared`
  // (another connection to the same shared store). It must not outlive this one's usefulness:
  // syncs, expiries and returns are this store's to make.
  std::shared_ptr<LocalCountingStore> Through(std::shared_ptr<Store> shared) const;

  LocalCountingStats Stats() const;

 private:
  struct State;
  LocalCountingStore(std::shared_ptr<State> state, std::shared_ptr<Store> via);

  std::shared_ptr<State> state_;
  std::shared_ptr<Store> via_;  // where this store's checks go
  bool owner_;                  // ticks, and flushes when destroyed
};

}  // namespace sluice
