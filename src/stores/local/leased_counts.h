// Leased counting (`counting: leased`): a bucket decided from tokens leased from the shared
// store, the ops short of tokens waiting for the next lease, what is unused given back.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "local_buckets.h"
#include "sluice/status.h"
#include "sluice/store.h"

namespace sluice::local {

// The leased mode's decisions, leases and returns over the buckets held. Not thread-safe: every
// call is made under the LocalCountingStore's lock, which guards the buckets.
class LeasedCounts {
 public:
  LeasedCounts(LocalBuckets* buckets, Counters* counters)
      : buckets_(buckets), counters_(counters) {}

  // Decides `waiter`'s op on the bucket at `now` from the tokens it holds, or from the shared
  // bucket being dry; when it can do neither, the op waits for a lease (and the lease to take,
  // when none is in flight, goes into `leases`): nullopt.
  std::optional<BucketReply> Take(const std::string& key, LocalBucket& b, Waiter waiter,
                                  int64_t now, Errands& leases);

  // What a lease's answer does to its bucket: its waiters' answers, and the call to make next
  // (another lease while ops wait and the store had all that was asked; or, once the owning
  // store is `closed`, the return of what was granted).
  struct Landing {
    std::vector<std::pair<Waiter, Result<BucketReply>>> answers;
    Errands next;
  };
  Landing Landed(const std::string& key, LocalBucket& b, const Result<BucketReply>& reply,
                 int64_t now, bool closed);

  // Adds the return of what the bucket holds to `out` when its lease has expired (whenever it
  // holds any, when `everything`), and files when the lease expires.
  void Collect(const std::string& key, LocalBucket& b, int64_t now, bool everything, Errands& out);

 private:
  // Spends held tokens; false when the op must wait for a lease.
  bool Spend(LocalBucket& b, int64_t cost, BucketReply& reply);
  void SetExpiry(LocalBucket& b, int64_t now);
  // A lease for the bucket's waiters: an up-to take.
  static BucketOp Start(const std::string& key, LocalBucket& b, int64_t now);
  static int64_t Size(const LocalBucket& b, int64_t need, int64_t now);
  static BucketReply DryRejection(const LocalBucket& b, int64_t cost, int64_t now);
  void MarkDry(LocalBucket& b, const BucketReply& reply, int64_t now);
  // Gives back what the bucket holds.
  BucketOp Return(const std::string& key, LocalBucket& b);

  LocalBuckets* const buckets_;
  Counters* const counters_;
  std::minstd_rand jitter_{std::random_device{}()};
};

}  // namespace sluice::local
