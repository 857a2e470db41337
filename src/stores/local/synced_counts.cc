#include "synced_counts.h"

#include <algorithm>
#include <cmath>

namespace sluice::local {

BucketReply SyncedCounts::Take(LocalBucket& b, int64_t cost, int64_t now) {
  b.tokens = b.RefilledTokens(now);
  b.tokens_ms = now;
  BucketReply reply;
  reply.allowed = cost <= 0 || b.tokens >= static_cast<double>(cost);
  if (reply.allowed) {
    b.tokens =
        std::min(static_cast<double>(b.limit.capacity), b.tokens - static_cast<double>(cost));
    b.unsent += cost;
  } else {
    reply.retry_ms = MsUntil(static_cast<double>(cost) - b.tokens, b.limit);
  }
  reply.remaining = std::max<int64_t>(0, static_cast<int64_t>(std::floor(b.tokens)));
  reply.reset_ms = MsUntil(static_cast<double>(b.limit.capacity) - b.tokens, b.limit);
  return reply;
}

void SyncedCounts::Collect(const std::string& key, LocalBucket& b, int64_t now, bool everything,
                           Errands& out) {
  if (b.syncing) {
    // A flush does not wait for the sync that is out: what was admitted since goes too.
    if (everything && b.unsent != 0) out.Add(TakeOwed(key, b), Errand::Kind::kOwed, key);
    return;
  }
  if (!everything && now < b.next_sync_ms) {
    buckets_->DueAt(b.next_sync_ms);
    return;
  }
  b.next_sync_ms = RoundUp(now, b.counting.sync_interval_ms);
  // Nothing owed, and either not used since the last sync (the tokens reckoned are as good as
  // any) or sending everything (a flush, the store closing: a call only to learn the tokens
  // would, at exit, be one the stopped loops never answer, keeping this state and the store
  // alive for ever).
  if (b.unsent == 0 && (everything || now - b.last_used_ms > b.counting.sync_interval_ms)) {
    return;
  }
  buckets_->DueAt(b.next_sync_ms);
  BucketOp op = TakeOwed(key, b);
  b.sending = op.cost;
  b.syncing = true;
  out.Add(std::move(op), Errand::Kind::kSync, key);
}

void SyncedCounts::Landed(LocalBucket& b, const Result<BucketReply>& reply, int64_t now) {
  b.syncing = false;
  if (reply.ok()) {
    // What the store holds after this sync, less what was admitted here since it was sent.
    b.tokens = static_cast<double>(reply->remaining - b.unsent);
    b.tokens_ms = now;
  } else {
    counters_->sync_failures.fetch_add(1, std::memory_order_relaxed);
    // A call that timed out, or that a lost connection cut off, may have been applied:
    // sending it again could count it twice.
    if (reply.status().code() != StatusCode::kDeadlineExceeded) b.unsent += b.sending;
  }
  b.sending = 0;
}

// A store down for long can leave more owed than a bucket holds; the rest goes next time.
BucketOp SyncedCounts::TakeOwed(const std::string& key, LocalBucket& b) {
  BucketOp op{key, b.limit, std::clamp(b.unsent, -b.limit.capacity, b.limit.capacity)};
  b.unsent -= op.cost;
  op.up_to = op.cost >= 0;  // what was admitted is sent even when the bucket has less
  return op;
}

}  // namespace sluice::local
