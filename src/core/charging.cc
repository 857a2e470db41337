#include "charging.h"

#include <algorithm>
#include <cassert>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace sluice {
namespace {

using Replies = std::vector<BucketReply>;

Charges Failed(Status error) {
  Charges charges;
  charges.error = std::move(error);
  return charges;
}

// The charges of ops the store answered with `replies`, one each: charged when allowed.
Charges Answered(const Replies& replies) {
  Charges charges;
  charges.ops.resize(replies.size());
  for (size_t i = 0; i < replies.size(); ++i) {
    charges.ops[i] = {true, false, replies[i], replies[i].allowed, std::nullopt};
  }
  return charges;
}

// A bucket known to stay short for `retry_ms` more: refused, nothing left, and full again a whole
// period after it has enough.
BucketReply InDebt(const BucketOp& op, int64_t retry_ms) {
  BucketReply reply;
  reply.retry_ms = retry_ms;
  reply.reset_ms = retry_ms + op.limit.period_ms;
  return reply;
}

// Ops whose keys repeat go to the store in rounds of distinct keys, one after the other, so that
// a key's later op sees what its earlier one took.
class Rounds : public std::enable_shared_from_this<Rounds> {
 public:
  static void Send(std::shared_ptr<Store> store, std::vector<BucketOp> ops, bool keys_may_repeat,
                   StoreCallback done) {
    if (!keys_may_repeat) return store->Apply(std::move(ops), std::move(done));
    std::unordered_map<std::string, size_t> seen;
    std::vector<size_t> round_of;
    round_of.reserve(ops.size());
    size_t rounds = 0;
    for (const BucketOp& op : ops) {
      round_of.push_back(seen[op.key]++);
      rounds = std::max(rounds, round_of.back() + 1);
    }
    if (rounds <= 1) return store->Apply(std::move(ops), std::move(done));
    auto self = std::shared_ptr<Rounds>(
        new Rounds(std::move(store), std::move(ops), std::move(round_of), rounds, std::move(done)));
    self->Run(0);
  }

 private:
  Rounds(std::shared_ptr<Store> store, std::vector<BucketOp> ops, std::vector<size_t> round_of,
         size_t rounds, StoreCallback done)
      : store_(std::move(store)),
        ops_(std::move(ops)),
        round_of_(std::move(round_of)),
        rounds_(rounds),
        replies_(ops_.size()),
        done_(std::move(done)) {}

  void Run(size_t round) {
    if (round == rounds_) return done_(std::move(replies_));
    std::vector<BucketOp> batch;
    std::vector<size_t> positions;
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (round_of_[i] != round) continue;
      batch.push_back(ops_[i]);
      positions.push_back(i);
    }
    store_->Apply(std::move(batch), [self = shared_from_this(), positions = std::move(positions),
                                     round](Result<Replies> replies) {
      if (!replies.ok()) return self->done_(replies.status());
      for (size_t k = 0; k < positions.size(); ++k) self->replies_[positions[k]] = (*replies)[k];
      self->Run(round + 1);
    });
  }

  const std::shared_ptr<Store> store_;
  const std::vector<BucketOp> ops_;
  const std::vector<size_t> round_of_;
  const size_t rounds_;
  Replies replies_;
  StoreCallback done_;
};

bool RefusedEnforced(const std::vector<BucketOp>& ops, const Charges& charges) {
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].enforced && charges.ops[i].answered && !charges.ops[i].reply.allowed) return true;
  }
  return false;
}

// The ops at `positions`, each with its cost times `sign` (0: a look).
std::vector<BucketOp> Subset(const std::vector<BucketOp>& ops, const std::vector<size_t>& positions,
                             int64_t sign) {
  std::vector<BucketOp> subset;
  subset.reserve(positions.size());
  for (size_t i : positions) {
    subset.push_back(ops[i]);
    subset.back().cost *= sign;
  }
  return subset;
}

void ChargeAll(std::shared_ptr<Store> store, std::vector<BucketOp> ops, const ChargeRules& rules,
               ChargesCallback done) {
  Rounds::Send(std::move(store), std::move(ops), rules.keys_may_repeat,
               [done = std::move(done)](Result<Replies> replies) {
                 done(replies.ok() ? Answered(*replies) : Failed(replies.status()));
               });
}

// One op at a time until an enforced one is refused; then, when the rules ask, a look at the
// rest.
class StopAtFirst : public std::enable_shared_from_this<StopAtFirst> {
 public:
  StopAtFirst(std::shared_ptr<Store> store, std::vector<BucketOp> ops, const ChargeRules& rules,
              ChargesCallback done)
      : store_(std::move(store)),
        ops_(std::move(ops)),
        keys_may_repeat_(rules.keys_may_repeat),
        look_past_stop_(rules.look_past_stop),
        done_(std::move(done)) {
    charges_.ops.resize(ops_.size());
  }

  void Ask(size_t next) {
    if (next == ops_.size()) return done_(std::move(charges_));
    store_->Apply({ops_[next]}, [self = shared_from_this(), next](Result<Replies> replies) {
      if (!replies.ok()) return self->done_(Failed(replies.status()));
      const BucketReply& reply = replies->front();
      self->charges_.ops[next] = {true, false, reply, reply.allowed, std::nullopt};
      if (!self->ops_[next].enforced || reply.allowed) return self->Ask(next + 1);
      if (self->look_past_stop_) return self->LookFrom(next + 1);
      self->done_(std::move(self->charges_));
    });
  }

 private:
  void LookFrom(size_t first) {
    std::vector<size_t> rest;
    for (size_t i = first; i < ops_.size(); ++i) rest.push_back(i);
    if (rest.empty()) return done_(std::move(charges_));
    Rounds::Send(store_, Subset(ops_, rest, 0), keys_may_repeat_,
                 [self = shared_from_this(), rest](Result<Replies> looks) {
                   if (!looks.ok()) return self->done_(Failed(looks.status()));
                   for (size_t k = 0; k < rest.size(); ++k) {
                     self->charges_.ops[rest[k]] = {true, false, (*looks)[k], false, std::nullopt};
                   }
                   self->done_(std::move(self->charges_));
                 });
  }

  const std::shared_ptr<Store> store_;
  const std::vector<BucketOp> ops_;
  const bool keys_may_repeat_;
  const bool look_past_stop_;
  Charges charges_;
  ChargesCallback done_;
};

// All at once; when an enforced op is refused, what the others took is given back.
void Refund(const std::shared_ptr<Store>& store, std::vector<BucketOp> ops,
            const ChargeRules& rules, ChargesCallback done) {
  auto held = std::make_shared<std::vector<BucketOp>>(ops);
  Rounds::Send(store, std::move(ops), rules.keys_may_repeat,
               [store, held, done = std::move(done)](Result<Replies> replies) mutable {
                 if (!replies.ok()) return done(Failed(replies.status()));
                 Charges charges = Answered(*replies);
                 if (!RefusedEnforced(*held, charges)) return done(std::move(charges));
                 GiveBack(store, *held, std::move(charges), std::move(done));
               });
}

// `done`, with the charges marked as made the refund's way.
ChargesCallback FellBack(ChargesCallback done) {
  return [done = std::move(done)](Charges charges) {
    charges.fell_back_to_refund = true;
    done(std::move(charges));
  };
}

// After an all-or-nothing call that refused: the refused ops count their own cost, into debt.
void ChargeRefused(const std::shared_ptr<Store>& store, const std::vector<BucketOp>& ops,
                   Charges decided, ChargesCallback done) {
  std::vector<size_t> refused;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!decided.ops[i].reply.allowed) refused.push_back(i);
  }
  if (refused.empty()) return done(std::move(decided));
  std::vector<BucketOp> own = Subset(ops, refused, 1);
  store->Apply(std::move(own), [decided = std::move(decided), refused = std::move(refused),
                                done = std::move(done)](Result<Replies> charged) mutable {
    if (!charged.ok()) return done(Failed(charged.status()));
    for (size_t k = 0; k < refused.size(); ++k) {
      decided.ops[refused[k]].reply = (*charged)[k];
      decided.ops[refused[k]].charged = true;
    }
    done(std::move(decided));
  });
}

bool KeysRepeat(const std::vector<BucketOp>& ops) {
  std::unordered_set<std::string_view> seen;
  for (const BucketOp& op : ops) {
    if (!seen.insert(op.key).second) return true;
  }
  return false;
}

void AllOrNothing(const std::shared_ptr<Store>& store, std::vector<BucketOp> ops,
                  const ChargeRules& rules, ChargesCallback done) {
  if (rules.keys_may_repeat && KeysRepeat(ops)) {
    return Refund(store, std::move(ops), rules, FellBack(std::move(done)));
  }
  auto held = std::make_shared<std::vector<BucketOp>>(ops);
  store->ApplyAllOrNothing(std::move(ops), [store, held, rules, done = std::move(done)](
                                               Result<Replies> replies) mutable {
    if (!replies.ok() && replies.status().code() == StatusCode::kFailedPrecondition) {
      return Refund(store, std::move(*held), rules, FellBack(std::move(done)));
    }
    if (!replies.ok()) return done(Failed(replies.status()));
    Charges charges = Answered(*replies);
    const bool refused = RefusedEnforced(*held, charges);
    for (OpCharge& op : charges.ops) op.charged &= !refused;
    if (!rules.refused_pay_own) return done(std::move(charges));
    ChargeRefused(store, *held, std::move(charges), std::move(done));
  });
}

void ByPolicy(std::shared_ptr<Store> store, std::vector<BucketOp> ops, const ChargeRules& rules,
              ChargesCallback done) {
  switch (rules.policy) {
    case MultiRulePolicy::kChargeAll:
      return ChargeAll(std::move(store), std::move(ops), rules, std::move(done));
    case MultiRulePolicy::kStopAtFirst:
      return std::make_shared<StopAtFirst>(std::move(store), std::move(ops), rules, std::move(done))
          ->Ask(0);
    case MultiRulePolicy::kRefund:
      return Refund(store, std::move(ops), rules, std::move(done));
    case MultiRulePolicy::kAllOrNothing:
      return AllOrNothing(store, std::move(ops), rules, std::move(done));
  }
}

// Remembers the enforced buckets the store refused, until their retry time.
void RememberRefusals(OverLimitCache& cache, const std::vector<BucketOp>& ops,
                      const Charges& charges) {
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpCharge& op = charges.ops[i];
    if (ops[i].enforced && op.answered && !op.from_cache && !op.reply.allowed) {
      cache.Remember(ops[i].key, op.reply.retry_ms);
    }
  }
}

// Charges the ops the over-limit cache did not answer (under a policy that spares the other
// ops of a refused plan, only looks at them), and merges their charges into `known`.
void ChargeTheRest(std::shared_ptr<Store> store, const std::vector<BucketOp>& ops,
                   const ChargeRules& rules, Charges known, ChargesCallback done) {
  assert(known.ops.size() == ops.size());
  const bool spare = rules.policy != MultiRulePolicy::kChargeAll;
  std::vector<BucketOp> sent;
  std::vector<size_t> sent_from;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (known.ops[i].from_cache) continue;
    sent.push_back(ops[i]);
    if (spare) sent.back().cost = 0;
    sent_from.push_back(i);
  }
  auto remembered = std::make_shared<const std::vector<BucketOp>>(sent);
  ByPolicy(std::move(store), std::move(sent), rules,
           [remembered, sent_from = std::move(sent_from), cache = rules.over_limit_cache,
            known = std::move(known), done = std::move(done)](Charges part) mutable {
             known.fell_back_to_refund = part.fell_back_to_refund;
             known.refund_failed = part.refund_failed;
             if (!part.error.ok()) {
               known.error = std::move(part.error);
               return done(std::move(known));
             }
             assert(part.ops.size() == sent_from.size());
             if (cache) RememberRefusals(*cache, *remembered, part);
             for (size_t k = 0; k < sent_from.size(); ++k) {
               known.ops[sent_from[k]] = part.ops[k];
             }
             done(std::move(known));
           });
}

}  // namespace

Charges FromCache(const std::vector<BucketOp>& ops, const ChargeRules& rules) {
  Charges charges;
  if (!rules.over_limit_cache) return charges;
  const bool whole_plan = rules.cached == CachedOverLimit::kRefusesThePlan;
  for (size_t i = 0; i < ops.size(); ++i) {
    const BucketOp& op = ops[i];
    if (!op.enforced || (whole_plan && op.cost <= 0)) continue;
    const int64_t retry_ms = rules.over_limit_cache->RetryMs(op.key);
    if (retry_ms <= 0) continue;
    charges.ops.resize(ops.size());
    charges.ops[i] = {true, true, InDebt(op, retry_ms), false, std::nullopt};
    ++charges.cache_answers;
    if (whole_plan) break;
  }
  charges.from_cache =
      charges.cache_answers > 0 && (whole_plan || charges.cache_answers == ops.size());
  return charges;
}

void Charge(std::shared_ptr<Store> store, std::vector<BucketOp> ops, const ChargeRules& rules,
            Charges known, ChargesCallback done) {
  if (known.from_cache) return done(std::move(known));
  if (known.cache_answers > 0) {
    return ChargeTheRest(std::move(store), ops, rules, std::move(known), std::move(done));
  }
  if (!rules.over_limit_cache)
    return ByPolicy(std::move(store), std::move(ops), rules, std::move(done));
  auto remembered = std::make_shared<const std::vector<BucketOp>>(ops);
  ByPolicy(std::move(store), std::move(ops), rules,
           [remembered, cache = rules.over_limit_cache, done = std::move(done)](Charges charges) {
             if (charges.error.ok()) RememberRefusals(*cache, *remembered, charges);
             done(std::move(charges));
           });
}

void GiveBack(const std::shared_ptr<Store>& store, const std::vector<BucketOp>& ops,
              Charges charges, ChargesCallback done) {
  // One refund per key, its costs summed: as a plain op, it never raises a bucket above its
  // capacity.
  std::vector<BucketOp> refunds;
  std::vector<std::optional<size_t>> refund_of(ops.size());  // per op: the refund answering it
  std::unordered_map<std::string_view, size_t> by_key;
  for (size_t i = 0; i < ops.size() && i < charges.ops.size(); ++i) {
    if (!charges.ops[i].charged || ops[i].cost == 0) continue;
    auto [it, added] = by_key.try_emplace(ops[i].key, refunds.size());
    if (added) {
      refunds.push_back(ops[i]);
      refunds.back().debt = false;
      refunds.back().cost = 0;
    }
    BucketOp& refund = refunds[it->second];
    refund.cost = std::max(-refund.limit.capacity, refund.cost - ops[i].cost);
    refund_of[i] = it->second;
  }
  if (refunds.empty()) return done(std::move(charges));
  store->Apply(std::move(refunds), [charges = std::move(charges), refund_of = std::move(refund_of),
                                    done = std::move(done)](Result<Replies> given_back) mutable {
    // When the refund fails, the plan is refused either way: the tokens stay taken.
    if (!given_back.ok()) {
      charges.refund_failed = true;
      return done(std::move(charges));
    }
    for (size_t i = 0; i < refund_of.size(); ++i) {
      if (!refund_of[i]) continue;
      charges.ops[i].charged = false;
      charges.ops[i].refunded = (*given_back)[*refund_of[i]];
    }
    done(std::move(charges));
  });
}

}  // namespace sluice
