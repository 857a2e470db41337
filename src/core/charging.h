// How the bucket operations of one plan are decided: the over-limit cache, the store call, and
// what the plan's other operations pay when one of them refuses (MultiRulePolicy). The limiter
// and the rate limit service both decide their plans here, so that a change to how requests are
// decided is made once; where they differ on purpose (Envoy counts every hit and may repeat a
// descriptor in one call), ChargeRules says so.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "sluice/limiter.h"
#include "sluice/over_limit_cache.h"
#include "sluice/status.h"
#include "sluice/store.h"

namespace sluice {

// What the over-limit cache's knowledge of one bucket decides.
enum class CachedOverLimit {
  // The whole plan is refused by the first enforced operation that takes tokens from a bucket
  // known to stay short: no other operation is asked or charged (the limiter's requests).
  kRefusesThePlan,
  // Each enforced operation on such a bucket, a look included, is answered in debt without the
  // store; the others are sent, and only looked at when the policy spares the other operations
  // of a refused call (the rate limit service, whose descriptors each answer for themselves).
  kAnswersItsOp,
};

// The inputs of one plan's charge beside its operations.
struct ChargeRules {
  MultiRulePolicy policy = MultiRulePolicy::kChargeAll;
  // None: every operation goes to the store. Refusals the store gives are remembered in it.
  std::shared_ptr<OverLimitCache> over_limit_cache;
  CachedOverLimit cached = CachedOverLimit::kRefusesThePlan;
  // Operations may share a key (Envoy's same descriptor twice in one call): they go to the store
  // in rounds of distinct keys, a key's later op after its earlier one, and kAllOrNothing is made
  // as kRefund makes it (one atomic step cannot take the same key twice).
  bool keys_may_repeat = false;
  // Under kStopAtFirst: the operations after the refusal are looked at (cost 0), so that each has
  // a reply, rather than left unasked.
  bool look_past_stop = false;
  // Under kAllOrNothing: a refused operation still counts its own cost, in a second call (Envoy's
  // rate limit service counts every hit, over the limit too).
  bool refused_pay_own = false;
};

// What became of one operation.
struct OpCharge {
  bool answered = false;    // the store or the cache answered it; else it was not asked
  bool from_cache = false;  // the over-limit cache answered it in debt, the store not asked
  BucketReply reply;        // when answered: the bucket's answer to the charge
  bool charged = false;     // its cost stayed taken
  // When its cost was given back: the bucket's answer to the refund.
  std::optional<BucketReply> refunded;
};

// What became of a plan's operations, one OpCharge each in the plan's order (FromCache's: none
// when the cache answered none); or the store's error (the operations' charges then unknown).
struct Charges {
  Status error;
  std::vector<OpCharge> ops;
  bool from_cache = false;           // the cache answered the whole plan; the store was not asked
  size_t cache_answers = 0;          // operations the cache answered
  bool fell_back_to_refund = false;  // kAllOrNothing made as kRefund makes it
  bool refund_failed = false;        // a refund the store failed: the tokens stay taken
};

using ChargesCallback = std::function<void(Charges)>;

// What the over-limit cache knows of `ops`, as `rules.cached` says: one OpCharge per op once it
// answered one, none when it answered none; from_cache when nothing is left for the store to
// answer.
Charges FromCache(const std::vector<BucketOp>& ops, const ChargeRules& rules);

// Charges the operations of `ops` that `known` (FromCache's) leaves unanswered, as
// `rules.policy` says, remembers the refusals in the over-limit cache, and calls `done` once,
// inline or on the store's thread:
// - kChargeAll: every op is charged, in one store call (or one per round of repeated keys).
// - kStopAtFirst: one op at a time, in order, until an enforced op is refused.
// - kRefund: all at once; when an enforced op is refused, the ops that were charged get their
//   cost back in a second call (GiveBack).
// - kAllOrNothing: all at once, charged only when every enforced op allows
//   (Store::ApplyAllOrNothing); made as kRefund makes it when the store cannot decide the ops in
//   one step.
// When the cache answered one of the ops and the policy is not kChargeAll, the others are only
// looked at.
void Charge(std::shared_ptr<Store> store, std::vector<BucketOp> ops, const ChargeRules& rules,
            Charges known, ChargesCallback done);

// Gives back what the charged operations of `charges` took, each from `ops[i]`, in one call (one
// refund per key, never above the bucket's capacity); a refund that fails leaves the tokens taken
// and says so (refund_failed).
void GiveBack(const std::shared_ptr<Store>& store, const std::vector<BucketOp>& ops,
              Charges charges, ChargesCallback done);

}  // namespace sluice
