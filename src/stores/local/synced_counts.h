// Synced counting (`counting: synced`): a bucket decided from this gateway's reckoning of its
// tokens, the counts admitted sent to the shared store every sync interval.
#pragma once

#include <cstdint>
#include <string>

#include "local_buckets.h"
#include "sluice/status.h"
#include "sluice/store.h"

namespace sluice::local {

// The synced mode's decisions and syncs over the buckets held. Not thread-safe: every call is
// made under the LocalCountingStore's lock, which guards the buckets.
class SyncedCounts {
 public:
  SyncedCounts(LocalBuckets* buckets, Counters* counters)
      : buckets_(buckets), counters_(counters) {}

  // Decides `cost` from the bucket's tokens as reckoned at `now`, and counts what it admits as
  // owed to the store.
  static BucketReply Take(LocalBucket& b, int64_t cost, int64_t now);

  // Adds the sync that is due for the bucket to `out` (every owed count when `everything`: a
  // flush), and files when the next one is due.
  void Collect(const std::string& key, LocalBucket& b, int64_t now, bool everything, Errands& out);

  // A sync's answer: the tokens the next interval enforces from, or, when the store failed,
  // the counts to send again.
  void Landed(LocalBucket& b, const Result<BucketReply>& reply, int64_t now);

 private:
  // The op that sends what the bucket owes the store, taken out of `unsent`.
  static BucketOp TakeOwed(const std::string& key, LocalBucket& b);

  LocalBuckets* const buckets_;
  Counters* const counters_;
};

}  // namespace sluice::local
