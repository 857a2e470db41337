#include "leased_counts.h"

#include <algorithm>
#include <cmath>

namespace sluice::local {
namespace {

constexpr int64_t kLeaseExpiryStepMs = 50;

}  // namespace

std::optional<BucketReply> LeasedCounts::Take(const std::string& key, LocalBucket& b, Waiter waiter,
                                              int64_t now, Errands& leases) {
  BucketReply reply;
  if (Spend(b, waiter.cost, reply)) return reply;
  if (now < b.dry_until_ms) return DryRejection(b, waiter.cost, now);
  b.waiters.push_back(std::move(waiter));
  if (!b.leasing) leases.Add(Start(key, b, now), Errand::Kind::kLease, key);
  return std::nullopt;
}

bool LeasedCounts::Spend(LocalBucket& b, int64_t cost, BucketReply& reply) {
  if (cost > 0 && b.held < cost) return false;
  b.held -= cost;  // a refund (cost < 0) is held until the lease expires
  if (cost > 0) b.spent_since_lease += cost;
  if (b.held > 0 && b.lease_expires_ms == kNever) SetExpiry(b, b.last_used_ms);
  reply = {true, b.held, 0, 0};
  return true;
}

void LeasedCounts::SetExpiry(LocalBucket& b, int64_t now) {
  b.lease_expires_ms = RoundUp(now + b.counting.lease_ttl_ms, kLeaseExpiryStepMs);
  buckets_->DueAt(b.lease_expires_ms);
}

// Enough for this gateway's rate on the bucket over one lease ttl, at least `need`, at most
// lease_max_fraction of the capacity (unless `need` is more).
int64_t LeasedCounts::Size(const LocalBucket& b, int64_t need, int64_t now) {
  const auto cap = std::max<int64_t>(
      1,
      static_cast<int64_t>(b.counting.lease_max_fraction * static_cast<double>(b.limit.capacity)));
  int64_t want = 1;
  if (b.lease_taken_ms >= 0) {
    const double per_ms = static_cast<double>(b.spent_since_lease) /
                          static_cast<double>(std::max<int64_t>(1, now - b.lease_taken_ms));
    want = static_cast<int64_t>(std::ceil(per_ms * static_cast<double>(b.counting.lease_ttl_ms)));
  }
  return std::min(b.limit.capacity, std::max(need, std::min(cap, std::max<int64_t>(1, want))));
}

BucketOp LeasedCounts::Start(const std::string& key, LocalBucket& b, int64_t now) {
  int64_t need = 0;
  for (const Waiter& w : b.waiters) need += w.cost;
  b.leasing = true;
  const int64_t size = Size(b, std::min(need, b.limit.capacity), now);
  b.lease_taken_ms = now;
  b.lease_asked = size;
  b.spent_since_lease = 0;
  BucketOp op{key, b.limit, size};
  op.up_to = true;
  return op;
}

BucketReply LeasedCounts::DryRejection(const LocalBucket& b, int64_t cost, int64_t now) {
  const int64_t short_ms = MsUntil(static_cast<double>(cost - b.held), b.limit);
  return {false, b.held, std::max(b.dry_until_ms - now, short_ms), 0};
}

LeasedCounts::Landing LeasedCounts::Landed(const std::string& key, LocalBucket& b,
                                           const Result<BucketReply>& reply, int64_t now,
                                           bool closed) {
  Landing out;
  b.leasing = false;
  if (!reply.ok()) {  // tokens a timed-out lease may have taken are lost: never overspent
    for (Waiter& w : b.waiters) out.answers.emplace_back(std::move(w), reply.status());
    b.waiters.clear();
    return out;
  }
  b.held += reply->granted;
  counters_->tokens_leased.fetch_add(static_cast<uint64_t>(reply->granted),
                                     std::memory_order_relaxed);
  if (b.held > 0) SetExpiry(b, now);
  if (!reply->allowed) MarkDry(b, *reply, now);
  size_t served = 0;
  for (; served < b.waiters.size(); ++served) {
    Waiter& w = b.waiters[served];
    BucketReply answer;
    if (!Spend(b, w.cost, answer)) break;
    out.answers.emplace_back(std::move(w), answer);
  }
  b.waiters.erase(b.waiters.begin(), b.waiters.begin() + static_cast<ptrdiff_t>(served));
  if (!b.waiters.empty() && reply->allowed) {  // the store had all asked: ask again
    out.next.Add(Start(key, b, now), Errand::Kind::kLease, key);
    return out;
  }
  // The shared bucket is dry: the rest wait for it to refill.
  for (Waiter& w : b.waiters) out.answers.emplace_back(std::move(w), DryRejection(b, w.cost, now));
  b.waiters.clear();
  if (closed && b.held > 0) out.next.Add(Return(key, b), Errand::Kind::kReturn, key);
  return out;
}

// Jittered, so that gateways short of tokens do not come back in the same order each time, the
// first to return always taking what refilled.
void LeasedCounts::MarkDry(LocalBucket& b, const BucketReply& reply, int64_t now) {
  const int64_t refill_ms = MsUntil(static_cast<double>(b.lease_asked - reply.granted), b.limit);
  const int64_t wait_ms = std::clamp<int64_t>(refill_ms, reply.retry_ms,
                                              std::max(reply.retry_ms, b.counting.lease_ttl_ms));
  b.dry_until_ms = now + std::uniform_int_distribution<int64_t>(wait_ms / 2, wait_ms)(jitter_);
}

// A bucket never takes back more than its capacity.
BucketOp LeasedCounts::Return(const std::string& key, LocalBucket& b) {
  const int64_t back = std::min(b.held, b.limit.capacity);
  counters_->tokens_returned.fetch_add(static_cast<uint64_t>(back), std::memory_order_relaxed);
  b.held = 0;
  b.lease_expires_ms = kNever;
  return {key, b.limit, -back};
}

void LeasedCounts::Collect(const std::string& key, LocalBucket& b, int64_t now, bool everything,
                           Errands& out) {
  if (b.held <= 0 || b.leasing) return;
  if (!everything && now < b.lease_expires_ms) {
    buckets_->DueAt(b.lease_expires_ms);
    return;
  }
  out.Add(Return(key, b), Errand::Kind::kReturn, key);
}

}  // namespace sluice::local
