#include "rls/call_charging.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace sluice::rls {
namespace {

using Replies = std::vector<BucketReply>;

// Ops whose keys repeat go to the store in rounds of distinct keys, one after the other, so
// that a key's later op sees what its earlier one took.
class Rounds : public std::enable_shared_from_this<Rounds> {
 public:
  static void Apply(std::shared_ptr<Store> store, std::vector<BucketOp> ops, StoreCallback done) {
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

bool RefusedEnforced(const std::vector<BucketOp>& ops, const Replies& replies) {
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].enforced && !replies[i].allowed) return true;
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

// Stop at first: one op at a time until an enforced one is refused, then a look at the rest.
class StopAtFirst : public std::enable_shared_from_this<StopAtFirst> {
 public:
  StopAtFirst(std::shared_ptr<Store> store, std::vector<BucketOp> ops, StoreCallback done)
      : store_(std::move(store)), ops_(std::move(ops)), done_(std::move(done)) {}

  void Ask(size_t next) {
    if (next == ops_.size()) return done_(std::move(replies_));
    store_->Apply({ops_[next]}, [self = shared_from_this(), next](Result<Replies> replies) {
      if (!replies.ok()) return self->done_(replies.status());
      self->replies_.push_back(replies->front());
      if (self->ops_[next].enforced && !replies->front().allowed) return self->LookAtTheRest();
      self->Ask(next + 1);
    });
  }

 private:
  void LookAtTheRest() {
    std::vector<size_t> rest;
    for (size_t i = replies_.size(); i < ops_.size(); ++i) rest.push_back(i);
    if (rest.empty()) return done_(std::move(replies_));
    Rounds::Apply(store_, Subset(ops_, rest, 0),
                  [self = shared_from_this()](Result<Replies> looks) {
                    if (!looks.ok()) return self->done_(looks.status());
                    for (BucketReply& look : *looks) self->replies_.push_back(look);
                    self->done_(std::move(self->replies_));
                  });
  }

  const std::shared_ptr<Store> store_;
  const std::vector<BucketOp> ops_;
  Replies replies_;
  StoreCallback done_;
};

// The refunds for the ops that were allowed: one op per key, its costs summed (as a plain op, a
// refund never raises a bucket above its capacity), and for each op the refund that answers it.
struct Refunds {
  std::vector<BucketOp> ops;
  std::vector<std::optional<size_t>> of_op;  // per original op
};

Refunds RefundsFor(const std::vector<BucketOp>& ops, const Replies& replies) {
  Refunds refunds;
  refunds.of_op.resize(ops.size());
  std::unordered_map<std::string, size_t> by_key;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!replies[i].allowed || ops[i].cost <= 0) continue;
    auto [it, added] = by_key.try_emplace(ops[i].key, refunds.ops.size());
    if (added) {
      BucketOp refund = ops[i];
      refund.debt = false;
      refund.cost = 0;
      refunds.ops.push_back(std::move(refund));
    }
    BucketOp& refund = refunds.ops[it->second];
    refund.cost = std::max(-refund.limit.capacity, refund.cost - ops[i].cost);
    refunds.of_op[i] = it->second;
  }
  return refunds;
}

void Refund(std::shared_ptr<Store> store, std::vector<BucketOp> ops, StoreCallback done) {
  auto held = std::make_shared<std::vector<BucketOp>>(ops);
  Rounds::Apply(store, std::move(ops),
                [store, held, done = std::move(done)](Result<Replies> replies) mutable {
                  if (!replies.ok() || !RefusedEnforced(*held, *replies))
                    return done(std::move(replies));
                  Refunds refunds = RefundsFor(*held, *replies);
                  if (refunds.ops.empty()) return done(std::move(replies));
                  store->Apply(
                      std::move(refunds.ops),
                      [charged = std::move(replies).value(), of_op = std::move(refunds.of_op),
                       done = std::move(done)](Result<Replies> given_back) mutable {
                        // When the refund fails, the call is over its limit either way: the tokens
                        // stay taken, and the replies say so.
                        for (size_t i = 0; given_back.ok() && i < charged.size(); ++i) {
                          if (!of_op[i]) continue;
                          const BucketReply& after = (*given_back)[*of_op[i]];
                          charged[i].remaining = after.remaining;
                          charged[i].reset_ms = after.reset_ms;
                        }
                        done(std::move(charged));
                      });
                });
}

bool KeysRepeat(const std::vector<BucketOp>& ops) {
  std::unordered_set<std::string_view> seen;
  for (const BucketOp& op : ops) {
    if (!seen.insert(op.key).second) return true;
  }
  return false;
}

void AllOrNothing(std::shared_ptr<Store> store, std::vector<BucketOp> ops, StoreCallback done) {
  if (KeysRepeat(ops)) return Refund(std::move(store), std::move(ops), std::move(done));
  auto held = std::make_shared<std::vector<BucketOp>>(ops);
  store->ApplyAllOrNothing(
      std::move(ops), [store, held, done = std::move(done)](Result<Replies> replies) mutable {
        if (!replies.ok() && replies.status().code() == StatusCode::kFailedPrecondition) {
          return Refund(std::move(store), std::move(*held), std::move(done));
        }
        if (!replies.ok()) return done(std::move(replies));
        std::vector<size_t> refused;
        for (size_t i = 0; i < held->size(); ++i) {
          if (!(*replies)[i].allowed) refused.push_back(i);
        }
        if (refused.empty()) return done(std::move(replies));
        // What the refused ops count of their own: their hits, into debt.
        std::vector<BucketOp> own = Subset(*held, refused, 1);
        store->Apply(std::move(own),
                     [decided = std::move(replies).value(), refused = std::move(refused),
                      done = std::move(done)](Result<Replies> charged) mutable {
                       if (!charged.ok()) return done(charged.status());
                       for (size_t k = 0; k < refused.size(); ++k)
                         decided[refused[k]] = (*charged)[k];
                       done(std::move(decided));
                     });
      });
}

}  // namespace

void ChargeCall(std::shared_ptr<Store> store, MultiRulePolicy policy, std::vector<BucketOp> ops,
                StoreCallback done) {
  switch (policy) {
    case MultiRulePolicy::kChargeAll:
      return Rounds::Apply(std::move(store), std::move(ops), std::move(done));
    case MultiRulePolicy::kStopAtFirst:
      return std::make_shared<StopAtFirst>(std::move(store), std::move(ops), std::move(done))
          ->Ask(0);
    case MultiRulePolicy::kRefund:
      return Refund(std::move(store), std::move(ops), std::move(done));
    case MultiRulePolicy::kAllOrNothing:
      return AllOrNothing(std::move(store), std::move(ops), std::move(done));
  }
}

}  // namespace sluice::rls
