#include "sluice/limiter.h"

#include <algorithm>
#include <atomic>
#include <future>
#include <set>

#include "sluice/bucket_key.h"

namespace sluice {

struct Limiter::State {
  std::vector<Rule> rules;
  LimiterOptions options;
  std::shared_ptr<Store> store;

  std::atomic<uint64_t> checks{0};
  std::atomic<uint64_t> allowed{0};
  std::atomic<uint64_t> rejected{0};
  std::atomic<uint64_t> store_errors{0};
  std::atomic<uint64_t> failure_policy{0};
  std::atomic<uint64_t> invalid_requests{0};
  std::atomic<uint64_t> cache_rejections{0};
  std::atomic<uint64_t> refund_fallbacks{0};
  std::atomic<uint64_t> quota_errors{0};
  std::atomic<uint64_t> quota_cache_rejections{0};

  // Counts the final decision and hands it on.
  void Finish(Decision decision, const DecisionCallback& done) {
    (decision.allowed ? allowed : rejected).fetch_add(1, std::memory_order_relaxed);
    done(std::move(decision));
  }

  // The decision when the store could not answer.
  Decision ByPolicy(Status error) {
    store_errors.fetch_add(1, std::memory_order_relaxed);
    failure_policy.fetch_add(1, std::memory_order_relaxed);
    Decision decision;
    decision.allowed = options.failure == FailurePolicy::kOpen;
    decision.checked = false;
    decision.error = std::move(error);
    return decision;
  }
};

namespace {

using StatePtr = std::shared_ptr<Limiter::State>;

// The quotas one request takes from: one op per applicable durable rule, and which rule it is.
struct QuotaPlan {
  std::vector<QuotaOp> ops;
  std::vector<size_t> rules;
};

// The buckets one request touches: one operation per applicable rule, and which rule it is; and
// its quotas, asked once the buckets have allowed.
struct Plan {
  std::vector<BucketOp> ops;
  std::vector<size_t> rules;
  std::vector<Limit> limits;  // ops[i].limit, kept when the ops go to the store
  QuotaPlan quotas;
};

// The verdicts for `replies`, which answer for the plan's operations from `first` on.
std::vector<RuleVerdict> ToVerdicts(const std::vector<Rule>& rules, const Plan& plan,
                                    const std::vector<BucketReply>& replies, size_t first = 0) {
  std::vector<RuleVerdict> verdicts;
  verdicts.reserve(replies.size());
  for (size_t i = 0; i < replies.size(); ++i) {
    const BucketReply& r = replies[i];
    const size_t rule = plan.rules[first + i];
    verdicts.push_back({rule, r.allowed, r.remaining, r.retry_ms, r.allowed, rules[rule].shadow,
                        plan.limits[first + i]});
  }
  return verdicts;
}

// Sends the whole plan at once and charges every bucket that allowed.
void ChargeAll(const StatePtr& state, Plan plan, DecisionCallback done) {
  std::vector<BucketOp> ops = std::move(plan.ops);
  state->store->Apply(std::move(ops), [state, plan = std::move(plan), done = std::move(done)](
                                          const Result<std::vector<BucketReply>>& replies) {
    if (!replies.ok()) return done(state->ByPolicy(replies.status()));
    done(CombineVerdicts(ToVerdicts(state->rules, plan, *replies)));
  });
}

// Asks the rules one at a time, from `next` on, stopping at the first that rejects.
struct StopAtFirst : std::enable_shared_from_this<StopAtFirst> {
  StatePtr state;
  Plan plan;
  DecisionCallback done;
  std::vector<RuleVerdict> verdicts;

  void Ask(size_t next) {
    if (next == plan.ops.size()) return done(CombineVerdicts(std::move(verdicts)));
    state->store->Apply({plan.ops[next]}, [self = shared_from_this(),
                                           next](const Result<std::vector<BucketReply>>& replies) {
      if (!replies.ok()) return self->done(self->state->ByPolicy(replies.status()));
      std::vector<RuleVerdict> one = ToVerdicts(self->state->rules, self->plan, *replies, next);
      self->verdicts.push_back(one.front());
      if (!one.front().allowed && !one.front().shadow) {
        return self->done(CombineVerdicts(std::move(self->verdicts)));
      }
      self->Ask(next + 1);
    });
  }
};

// Gives back what the verdicts of `decision` that are charged took, each from ops[i] (its
// verdicts and the ops match one to one), in one call; then hands the decision on with those
// verdicts no longer charged. A refund that fails leaves the tokens taken.
void RefundCharged(const StatePtr& state, const std::vector<BucketOp>& ops, Decision decision,
                   DecisionCallback done) {
  std::vector<BucketOp> refunds;
  std::vector<size_t> refunded;  // positions in decision.verdicts
  for (size_t i = 0; i < decision.verdicts.size() && i < ops.size(); ++i) {
    if (!decision.verdicts[i].charged || ops[i].cost == 0) continue;
    BucketOp op = ops[i];
    op.cost = -op.cost;
    refunds.push_back(std::move(op));
    refunded.push_back(i);
  }
  if (refunds.empty()) return done(std::move(decision));
  state->store->Apply(
      std::move(refunds),
      [state, decision = std::move(decision), refunded = std::move(refunded),
       done = std::move(done)](const Result<std::vector<BucketReply>>& result) mutable {
        if (result.ok()) {
          for (size_t i : refunded) decision.verdicts[i].charged = false;
        } else {
          // The request is rejected either way; the tokens stay taken.
          state->store_errors.fetch_add(1, std::memory_order_relaxed);
        }
        done(std::move(decision));
      });
}

// Sends the whole plan at once; when the answer is no, gives back what the allowing rules took.
void Refund(const StatePtr& state, Plan plan, DecisionCallback done) {
  std::vector<BucketOp> ops = plan.ops;  // the plan keeps its own: refunds are built from it
  state->store->Apply(std::move(ops), [state, plan = std::move(plan), done = std::move(done)](
                                          const Result<std::vector<BucketReply>>& replies) mutable {
    if (!replies.ok()) return done(state->ByPolicy(replies.status()));
    Decision decision = CombineVerdicts(ToVerdicts(state->rules, plan, *replies));
    if (decision.allowed) return done(std::move(decision));
    RefundCharged(state, plan.ops, std::move(decision), std::move(done));
  });
}

// Sends the whole plan in one all-or-nothing call: nothing is charged unless every enforced rule
// allows. Where the store cannot decide them in one step (keys on several cluster shards), the
// check is made as Refund makes it, and the decision says so.
void AllOrNothing(const StatePtr& state, Plan plan, DecisionCallback done) {
  std::vector<BucketOp> ops = plan.ops;  // the plan keeps its own for the fallback
  state->store->ApplyAllOrNothing(
      std::move(ops), [state, plan = std::move(plan), done = std::move(done)](
                          const Result<std::vector<BucketReply>>& replies) mutable {
        if (!replies.ok() && replies.status().code() == StatusCode::kFailedPrecondition) {
          state->refund_fallbacks.fetch_add(1, std::memory_order_relaxed);
          return Refund(state, std::move(plan), [done = std::move(done)](Decision decision) {
            decision.fell_back_to_refund = true;
            done(std::move(decision));
          });
        }
        if (!replies.ok()) return done(state->ByPolicy(replies.status()));
        Decision decision = CombineVerdicts(ToVerdicts(state->rules, plan, *replies));
        for (RuleVerdict& verdict : decision.verdicts) verdict.charged &= decision.allowed;
        done(std::move(decision));
      });
}

// The over-limit cache's decision for `plan`: rejected by the first enforced rule whose bucket is
// known to stay short until later; none when every bucket may have room.
std::optional<Decision> CachedRejection(const Limiter::State& state, const Plan& plan) {
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    if (state.rules[plan.rules[i]].shadow || plan.ops[i].cost <= 0) continue;
    const int64_t retry_ms = state.options.over_limit_cache->RetryMs(plan.ops[i].key);
    if (retry_ms <= 0) continue;
    Decision decision =
        CombineVerdicts({{plan.rules[i], false, 0, retry_ms, false, false, plan.limits[i]}});
    decision.from_cache = true;
    return decision;
  }
  return std::nullopt;
}

// `done`, after remembering in the over-limit cache each enforced bucket the store rejected.
DecisionCallback RememberingRejections(const Limiter::State& state, const Plan& plan,
                                       DecisionCallback done) {
  std::vector<std::pair<size_t, std::string>> keys;  // rule -> its bucket's key
  keys.reserve(plan.ops.size());
  for (size_t i = 0; i < plan.ops.size(); ++i) keys.emplace_back(plan.rules[i], plan.ops[i].key);
  return [cache = state.options.over_limit_cache, keys = std::move(keys),
          done = std::move(done)](Decision decision) {
    for (const RuleVerdict& v : decision.verdicts) {
      if (!decision.checked || v.allowed || v.shadow) continue;
      for (const auto& [rule, key] : keys) {
        if (rule == v.rule) cache->Remember(key, v.retry_ms);
      }
    }
    done(std::move(decision));
  };
}

// The verdict of a durable rule from its quota's reply: what is left, the window's length as the
// limit's period (RateLimit-Policy's w), and the time to the window's end as its reset (and, when
// rejected, its retry).
RuleVerdict QuotaVerdict(const Rule& rule, const QuotaOp& op, size_t index,
                         const QuotaReply& reply) {
  const int64_t reset_ms = std::max<int64_t>(1, reply.window_end_ms - reply.now_ms);
  const Limit limit{op.limit, op.limit,
                    std::max<int64_t>(1, reply.window_end_ms - reply.window_start_ms)};
  return {index,
          reply.allowed,
          std::max<int64_t>(0, op.limit - reply.used),
          reply.allowed ? 0 : reset_ms,
          reply.charged,
          rule.shadow,
          limit,
          reset_ms};
}

// The spent-quota memory's decision for `plan`: rejected by the first enforced durable rule whose
// quota the store knows to be spent; none when the store must be asked.
std::optional<Decision> SpentQuota(const Limiter::State& state, const Plan& plan) {
  const QuotaPlan& quotas = plan.quotas;
  for (size_t i = 0; i < quotas.ops.size(); ++i) {
    if (!quotas.ops[i].enforced || quotas.ops[i].cost <= 0) continue;
    std::optional<QuotaReply> known = state.options.quota_store->KnownRejection(quotas.ops[i]);
    if (!known) continue;
    const size_t rule = quotas.rules[i];
    Decision decision =
        CombineVerdicts({QuotaVerdict(state.rules[rule], quotas.ops[i], rule, *known)});
    decision.from_cache = true;
    return decision;
  }
  return std::nullopt;
}

// The rate limit rules' decision with the quotas' verdicts among them, in rule order.
Decision WithQuotaVerdicts(Decision decision, std::vector<RuleVerdict> quota_verdicts) {
  std::vector<RuleVerdict> verdicts = std::move(decision.verdicts);
  verdicts.insert(verdicts.end(), quota_verdicts.begin(), quota_verdicts.end());
  std::stable_sort(verdicts.begin(), verdicts.end(),
                   [](const RuleVerdict& a, const RuleVerdict& b) { return a.rule < b.rule; });
  Decision combined = CombineVerdicts(std::move(verdicts));
  combined.checked = decision.checked;
  combined.error = std::move(decision.error);
  combined.fell_back_to_refund = decision.fell_back_to_refund;
  return combined;
}

// What follows the rate limit rules' decision when the request has durable rules: a rejected
// request is done (no quota spent); an allowed one takes its quotas, in one atomic take. When a
// quota rejects it (or the quota store fails and its policy is closed), the rate limit rules'
// tokens follow the policy: given back under refund and all-or-nothing. `rate_ops` are the rate
// limit rules' ops, which the decision's verdicts match one to one.
DecisionCallback ThenQuotas(const StatePtr& state, QuotaPlan quotas, std::vector<BucketOp> rate_ops,
                            DecisionCallback done) {
  return [state, quotas = std::move(quotas), rate_ops = std::move(rate_ops),
          done = std::move(done)](Decision decision) mutable {
    if (!decision.allowed) return state->Finish(std::move(decision), done);
    std::vector<QuotaOp> ops = quotas.ops;  // kept for the verdicts
    state->options.quota_store->Take(
        std::move(ops), [state, quotas = std::move(quotas), rate_ops = std::move(rate_ops),
                         decision = std::move(decision),
                         done = std::move(done)](Result<std::vector<QuotaReply>> replies) mutable {
          std::vector<RuleVerdict> verdicts;
          if (replies.ok() && replies->size() == quotas.ops.size()) {
            for (size_t i = 0; i < quotas.ops.size(); ++i) {
              const size_t rule = quotas.rules[i];
              verdicts.push_back(
                  QuotaVerdict(state->rules[rule], quotas.ops[i], rule, (*replies)[i]));
            }
          } else {
            state->quota_errors.fetch_add(1, std::memory_order_relaxed);
            state->failure_policy.fetch_add(1, std::memory_order_relaxed);
            decision.checked = false;
            decision.quota_failed = true;
            decision.error = replies.ok()
                                 ? Status::StoreError("the quota store answered for other quotas")
                                 : replies.status();
            decision.allowed = state->options.quota_failure == FailurePolicy::kOpen;
          }
          const bool rejected =
              decision.quota_failed
                  ? !decision.allowed
                  : std::any_of(verdicts.begin(), verdicts.end(),
                                [](const RuleVerdict& v) { return !v.allowed && !v.shadow; });
          auto finish = [state, verdicts = std::move(verdicts),
                         done = std::move(done)](Decision rate_decision) mutable {
            const bool failed = rate_decision.quota_failed;
            const bool allowed = rate_decision.allowed;
            Decision final = WithQuotaVerdicts(std::move(rate_decision), std::move(verdicts));
            if (failed) {
              final.quota_failed = true;
              final.allowed = allowed;
            }
            state->Finish(std::move(final), done);
          };
          const MultiRulePolicy policy = state->options.policy;
          if (rejected &&
              (policy == MultiRulePolicy::kRefund || policy == MultiRulePolicy::kAllOrNothing)) {
            return RefundCharged(state, rate_ops, std::move(decision), std::move(finish));
          }
          finish(std::move(decision));
        });
  };
}

// Each algorithm's buckets have keys of their own: a rule that changes algorithm starts afresh
// rather than reading another algorithm's state.
const char* AlgorithmPrefix(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kGcra:
      return "gcra:";
    case Algorithm::kFixedWindow:
      return "fw:";
    case Algorithm::kTokenBucket:
      break;
  }
  return "";
}

// Whether a report of a request's cost may charge `rule`: it can go into debt.
bool TakesReports(const Rule& rule) {
  return rule.algorithm == Algorithm::kTokenBucket && rule.counting.mode == Counting::kShared;
}

// The bucket operations for `request`, or the reason a key could not be built: a check's, or
// with `reported`, the charges of a report.
Result<Plan> MakePlan(const Limiter::State& state, const Request& request,
                      const Limiter::ReportedCost* reported = nullptr) {
  Plan plan;
  for (size_t i = 0; i < state.rules.size(); ++i) {
    const Rule& rule = state.rules[i];
    const std::string* value = request.Find(rule.attribute);
    if (value == nullptr || !rule.MatchesRoute(request)) continue;
    std::optional<int64_t> cost;
    if (reported == nullptr) {
      cost = rule.CostReported() ? 0 : request.cost().value_or(rule.cost);
    } else if (TakesReports(rule)) {
      cost = (*reported)(rule);
    }
    if (!cost) continue;
    if (rule.durable) {  // never reported: it is no token bucket
      if (Result<std::string> key = BucketKey("", rule.BucketName(), *value); !key.ok()) {
        return Status::InvalidArgument("attribute \"" + rule.attribute +
                                       "\": " + key.status().message());
      }
      plan.quotas.ops.push_back({std::string(rule.BucketName()), *value,
                                 rule.LimitFor(*value).capacity, *cost, WindowOf(rule),
                                 !rule.shadow});
      plan.quotas.rules.push_back(i);
      continue;
    }
    Result<std::string> key = BucketKey(state.options.key_prefix + AlgorithmPrefix(rule.algorithm),
                                        rule.BucketName(), *value, state.options.hash_tag_values);
    if (!key.ok()) {
      return Status::InvalidArgument("attribute \"" + rule.attribute +
                                     "\": " + key.status().message());
    }
    const Limit& limit = rule.LimitFor(*value);
    plan.ops.push_back({std::move(key).value(), limit, *cost, rule.wait, rule.algorithm,
                        !rule.shadow,
                        /*up_to=*/false, rule.counting, /*debt=*/reported != nullptr});
    plan.rules.push_back(i);
    plan.limits.push_back(limit);
  }
  return plan;
}

Status ValidateRules(const std::vector<Rule>& rules) {
  std::set<std::string_view> names;
  std::set<std::string_view> buckets;
  for (const Rule& rule : rules) {
    if (Status s = rule.Validate(); !s.ok()) return s;
    if (!names.insert(rule.name).second) {
      return Status::InvalidArgument("two rules are named \"" + rule.name + "\"");
    }
    if (!buckets.insert(rule.BucketName()).second) {
      return Status::InvalidArgument("rule \"" + rule.name + "\" would share the bucket family \"" +
                                     std::string(rule.BucketName()) +
                                     "\" with an earlier rule; give it its own bucket name");
    }
  }
  return {};
}

Status ValidatePrefix(const std::string& prefix) {
  if (prefix.size() > 64) return Status::InvalidArgument("key prefix is longer than 64 bytes");
  for (char c : prefix) {
    if (c <= ' ' || c == 0x7f || c == '{' || c == '}') {
      return Status::InvalidArgument("key prefix holds a space, control character or brace");
    }
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<Limiter>> Limiter::Create(std::vector<Rule> rules, LimiterOptions options,
                                                 std::shared_ptr<Store> store) {
  if (store == nullptr) return Status::InvalidArgument("a limiter needs a store");
  if (Status s = ValidatePrefix(options.key_prefix); !s.ok()) return s;
  if (Status s = ValidateRules(rules); !s.ok()) return s;
  const bool counts_locally = std::any_of(rules.begin(), rules.end(),
                                          [](const Rule& rule) { return rule.CountsLocally(); });
  if (counts_locally && !store->CountsLocally()) {
    return Status::InvalidArgument(
        "synced and leased rules need a LocalCountingStore in front of the shared store");
  }
  const bool durable =
      std::any_of(rules.begin(), rules.end(), [](const Rule& rule) { return rule.durable; });
  if (durable && options.quota_store == nullptr) {
    return Status::InvalidArgument("durable rules need a quota store");
  }
  auto state = std::make_shared<State>();
  state->rules = std::move(rules);
  state->options = std::move(options);
  state->store = std::move(store);
  return std::unique_ptr<Limiter>(new Limiter(std::move(state)));
}

Limiter::Limiter(std::shared_ptr<State> state) : state_(std::move(state)) {}
Limiter::~Limiter() = default;

void Limiter::Check(const Request& request, DecisionCallback done) const {
  state_->checks.fetch_add(1, std::memory_order_relaxed);
  Result<Plan> plan = MakePlan(*state_, request);
  if (!plan.ok()) {
    state_->invalid_requests.fetch_add(1, std::memory_order_relaxed);
    Decision decision;
    decision.allowed = false;
    decision.checked = false;
    decision.error = plan.status();
    return state_->Finish(std::move(decision), done);
  }
  if (plan->ops.empty() && plan->quotas.ops.empty()) {
    return state_->Finish(CombineVerdicts({}), done);
  }
  if (!plan->quotas.ops.empty()) {
    if (std::optional<Decision> spent = SpentQuota(*state_, *plan)) {
      state_->quota_cache_rejections.fetch_add(1, std::memory_order_relaxed);
      return state_->Finish(std::move(spent).value(), done);
    }
  }
  if (state_->options.over_limit_cache) {
    if (std::optional<Decision> cached = CachedRejection(*state_, *plan)) {
      state_->cache_rejections.fetch_add(1, std::memory_order_relaxed);
      return state_->Finish(std::move(cached).value(), done);
    }
  }
  // The decision is counted once, when it is final: after the quotas, when there are any.
  if (plan->quotas.ops.empty()) {
    done = [state = state_, done = std::move(done)](Decision decision) {
      state->Finish(std::move(decision), done);
    };
  } else {
    done = ThenQuotas(state_, std::move(plan->quotas), plan->ops, std::move(done));
  }
  if (state_->options.over_limit_cache) {
    done = RememberingRejections(*state_, *plan, std::move(done));
  }
  if (plan->ops.empty()) return done(CombineVerdicts({}));

  switch (state_->options.policy) {
    case MultiRulePolicy::kChargeAll:
      return ChargeAll(state_, std::move(plan).value(), std::move(done));
    case MultiRulePolicy::kStopAtFirst: {
      auto chain = std::make_shared<StopAtFirst>();
      chain->state = state_;
      chain->plan = std::move(plan).value();
      chain->done = std::move(done);
      return chain->Ask(0);
    }
    case MultiRulePolicy::kRefund:
      return Refund(state_, std::move(plan).value(), std::move(done));
    case MultiRulePolicy::kAllOrNothing:
      return AllOrNothing(state_, std::move(plan).value(), std::move(done));
  }
}

void Limiter::Report(const Request& request, const ReportedCost& cost,
                     DecisionCallback done) const {
  Result<Plan> plan = MakePlan(*state_, request, &cost);
  if (!plan.ok() || plan->ops.empty()) {
    Decision decision = CombineVerdicts({});
    if (!plan.ok()) {
      decision.checked = false;
      decision.error = plan.status();
    }
    return done(std::move(decision));
  }
  std::vector<BucketOp> ops = std::move(plan->ops);
  state_->store->Apply(std::move(ops),
                       [state = state_, plan = std::move(plan).value(),
                        done = std::move(done)](const Result<std::vector<BucketReply>>& replies) {
                         if (replies.ok())
                           return done(CombineVerdicts(ToVerdicts(state->rules, plan, *replies)));
                         state->store_errors.fetch_add(1, std::memory_order_relaxed);
                         Decision decision;
                         decision.checked = false;
                         decision.error = replies.status();
                         done(std::move(decision));
                       });
}

Decision Limiter::CheckBlocking(const Request& request) const {
  std::promise<Decision> promise;
  std::future<Decision> future = promise.get_future();
  Check(request, [&promise](Decision decision) { promise.set_value(std::move(decision)); });
  return future.get();
}

const std::vector<Rule>& Limiter::rules() const { return state_->rules; }
const LimiterOptions& Limiter::options() const { return state_->options; }

LimiterStats Limiter::Stats() const {
  auto get = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  return {get(state_->checks),           get(state_->allowed),
          get(state_->rejected),         get(state_->store_errors),
          get(state_->failure_policy),   get(state_->invalid_requests),
          get(state_->cache_rejections), get(state_->refund_fallbacks),
          get(state_->quota_errors),     get(state_->quota_cache_rejections)};
}

}  // namespace sluice
