// How the bucket operations of one ShouldRateLimit call are charged, by `rls.policy`: what the
// call's other descriptors pay when one of them is over its limit. The descriptor over its limit
// always counts its own hits (its op takes them into debt), as envoyproxy/ratelimit counts every
// hit; the policy decides only for the others.
#pragma once

#include <memory>
#include <vector>

#include "sluice/limiter.h"
#include "sluice/store.h"

namespace sluice::rls {

// Applies `ops` (keys may repeat: such ops are counted in turn, a key's second op in a store call
// after its first) to `store` as `policy` says, and calls `done` once, with one reply per op, or
// with the store's first error:
// - kChargeAll: every op is charged; one store call, or one per repetition of a key.
// - kStopAtFirst: one op at a time, in order, until an enforced op is refused; the ops after it
//   are looked at (cost 0), not charged.
// - kRefund: all at once; when an enforced op is refused, the ops that were allowed get their
//   cost back in a second call, and answer what their bucket holds after it.
// - kAllOrNothing: all at once, and charged only when every enforced op allows
//   (Store::ApplyAllOrNothing); otherwise a second call charges the refused ops alone. Made as
//   kRefund makes it when a key repeats or the store cannot decide the ops in one step.
void ChargeCall(std::shared_ptr<Store> store, MultiRulePolicy policy, std::vector<BucketOp> ops,
                StoreCallback done);

}  // namespace sluice::rls
