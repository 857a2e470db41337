#include "sluice/limiter.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <future>
#include <set>

#include "algorithm_kind.h"
#include "charging.h"
#include "sluice/bucket_key.h"

namespace sluice {

struct Limiter::State {
  std::vector<Rule> rules;
  LimiterOptions options;
  std::shared_ptr<Store> store;
  // How its plans are charged: the policy and the over-limit cache of `options`; a rule's
  // request is one client's, so a bucket known to be short refuses it whole.
  ChargeRules charge_rules;

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

// The operations decided for one request before any store is asked: one bucket operation per
// applicable rate limit rule, one quota operation per applicable durable rule (asked once the
// buckets have allowed), and which rule each answers for.
struct Plan {
  std::vector<BucketOp> ops;
  std::vector<size_t> rules;
  std::vector<Limit> limits;  // ops[i].limit, kept when the ops go to the store
  std::vector<QuotaOp> quota_ops;
  std::vector<size_t> quota_rules;
};

// The verdicts of the plan's operations that were answered, in the plan's order.
std::vector<RuleVerdict> ToVerdicts(const std::vector<Rule>& rules, const Plan& plan,
                                    const Charges& charges) {
  std::vector<RuleVerdict> verdicts;
  verdicts.reserve(charges.ops.size());
  for (size_t i = 0; i < charges.ops.size(); ++i) {
    const OpCharge& op = charges.ops[i];
    if (!op.answered) continue;
    const size_t rule = plan.rules[i];
    verdicts.push_back({rule, op.reply.allowed, op.reply.remaining, op.reply.retry_ms, op.charged,
                        rules[rule].shadow, plan.limits[i]});
  }
  return verdicts;
}

// The rate limit rules' decision from their charges: the failure policy's when the store failed.
Decision DecisionOf(Limiter::State& state, const Plan& plan, const Charges& charges) {
  if (charges.fell_back_to_refund) state.refund_fallbacks.fetch_add(1, std::memory_order_relaxed);
  if (charges.refund_failed) state.store_errors.fetch_add(1, std::memory_order_relaxed);
  Decision decision = charges.error.ok() ? CombineVerdicts(ToVerdicts(state.rules, plan, charges))
                                         : state.ByPolicy(charges.error);
  decision.from_cache = charges.from_cache;
  decision.fell_back_to_refund = charges.fell_back_to_refund;
  return decision;
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
  for (size_t i = 0; i < plan.quota_ops.size(); ++i) {
    const QuotaOp& op = plan.quota_ops[i];
    if (!op.enforced || op.cost <= 0) continue;
    std::optional<QuotaReply> known = state.options.quota_store->KnownRejection(op);
    if (!known) continue;
    const size_t rule = plan.quota_rules[i];
    Decision decision = CombineVerdicts({QuotaVerdict(state.rules[rule], op, rule, *known)});
    decision.from_cache = true;
    return decision;
  }
  return std::nullopt;
}

// The rate limit rules' decision with the quotas' verdicts among them, in rule order; a quota
// store failure's decision stands.
Decision WithQuotaVerdicts(Decision decision, std::vector<RuleVerdict> quota_verdicts) {
  std::vector<RuleVerdict> verdicts = std::move(decision.verdicts);
  verdicts.insert(verdicts.end(), quota_verdicts.begin(), quota_verdicts.end());
  std::stable_sort(verdicts.begin(), verdicts.end(),
                   [](const RuleVerdict& a, const RuleVerdict& b) { return a.rule < b.rule; });
  Decision combined = CombineVerdicts(std::move(verdicts));
  combined.checked = decision.checked;
  combined.error = std::move(decision.error);
  combined.fell_back_to_refund = decision.fell_back_to_refund;
  if (decision.quota_failed) {
    combined.quota_failed = true;
    combined.allowed = decision.allowed;
  }
  return combined;
}

// The quotas' verdicts from the quota store's replies, one per quota op; none when it failed or
// answered for other quotas, and then `decision` is the quota failure policy's.
std::vector<RuleVerdict> QuotaVerdicts(Limiter::State& state, const Plan& plan,
                                       const Result<std::vector<QuotaReply>>& replies,
                                       Decision& decision) {
  std::vector<RuleVerdict> verdicts;
  if (replies.ok() && replies->size() == plan.quota_ops.size()) {
    for (size_t i = 0; i < plan.quota_ops.size(); ++i) {
      const size_t rule = plan.quota_rules[i];
      verdicts.push_back(QuotaVerdict(state.rules[rule], plan.quota_ops[i], rule, (*replies)[i]));
    }
    return verdicts;
  }
  state.quota_errors.fetch_add(1, std::memory_order_relaxed);
  state.failure_policy.fetch_add(1, std::memory_order_relaxed);
  decision.checked = false;
  decision.quota_failed = true;
  decision.error = replies.ok() ? Status::StoreError("the quota store answered for other quotas")
                                : replies.status();
  decision.allowed = state.options.quota_failure == FailurePolicy::kOpen;
  return verdicts;
}

// Whether the quotas refuse a request its rate limit rules allowed.
bool QuotasRefuse(const Decision& decision, const std::vector<RuleVerdict>& verdicts) {
  if (decision.quota_failed) return !decision.allowed;
  return std::any_of(verdicts.begin(), verdicts.end(),
                     [](const RuleVerdict& v) { return !v.allowed && !v.shadow; });
}

// Gives back what the rate limit rules took, then hands on `decision` with the verdicts given
// back marked uncharged (they match the plan's ops one to one: the rules allowed, so each was
// asked).
void GiveBackRateTokens(const StatePtr& state, const std::shared_ptr<const Plan>& plan,
                        Charges charges, Decision decision, DecisionCallback done) {
  GiveBack(state->store, plan->ops, std::move(charges),
           [state, decision = std::move(decision),
            done = std::move(done)](const Charges& given) mutable {
             if (given.refund_failed) state->store_errors.fetch_add(1, std::memory_order_relaxed);
             assert(decision.verdicts.size() == given.ops.size());
             for (size_t i = 0; i < decision.verdicts.size() && i < given.ops.size(); ++i) {
               decision.verdicts[i].charged = given.ops[i].charged;
             }
             done(std::move(decision));
           });
}

// What follows the rate limit rules' decision when the request has durable rules: a rejected
// request is done (no quota spent); an allowed one takes its quotas, in one atomic take. When a
// quota rejects it (or the quota store fails and its policy is closed), the rate limit rules'
// tokens follow the policy: given back under refund and all-or-nothing.
void ThenQuotas(const StatePtr& state, const std::shared_ptr<const Plan>& plan, Charges charges,
                Decision decision, DecisionCallback done) {
  if (!decision.allowed) return state->Finish(std::move(decision), done);
  std::vector<QuotaOp> ops = plan->quota_ops;  // the plan keeps its own for the verdicts
  state->options.quota_store->Take(
      std::move(ops),
      [state, plan, charges = std::move(charges), decision = std::move(decision),
       done = std::move(done)](const Result<std::vector<QuotaReply>>& replies) mutable {
        std::vector<RuleVerdict> verdicts = QuotaVerdicts(*state, *plan, replies, decision);
        const bool refused = QuotasRefuse(decision, verdicts);
        auto finish = [state, verdicts = std::move(verdicts),
                       done = std::move(done)](Decision rate_decision) mutable {
          state->Finish(WithQuotaVerdicts(std::move(rate_decision), std::move(verdicts)), done);
        };
        const MultiRulePolicy policy = state->options.policy;
        if (refused &&
            (policy == MultiRulePolicy::kRefund || policy == MultiRulePolicy::kAllOrNothing)) {
          return GiveBackRateTokens(state, plan, std::move(charges), std::move(decision),
                                    std::move(finish));
        }
        finish(std::move(decision));
      });
}

// Whether a report of a request's cost may charge `rule`: it can go into debt.
bool TakesReports(const Rule& rule) {
  return AlgorithmOf(rule.algorithm).partial_takes && rule.counting.mode == Counting::kShared;
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
      plan.quota_ops.push_back({std::string(rule.BucketName()), *value,
                                rule.LimitFor(*value).capacity, *cost, WindowOf(rule),
                                !rule.shadow});
      plan.quota_rules.push_back(i);
      continue;
    }
    std::string prefix = state.options.key_prefix;
    prefix += AlgorithmOf(rule.algorithm).key_prefix;
    Result<std::string> key =
        BucketKey(prefix, rule.BucketName(), *value, state.options.hash_tag_values);
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
  state->charge_rules.policy = state->options.policy;
  state->charge_rules.over_limit_cache = state->options.over_limit_cache;
  return std::unique_ptr<Limiter>(new Limiter(std::move(state)));
}

Limiter::Limiter(std::shared_ptr<State> state) : state_(std::move(state)) {}
Limiter::~Limiter() = default;

void Limiter::Check(const Request& request, DecisionCallback done) const {
  state_->checks.fetch_add(1, std::memory_order_relaxed);
  Result<Plan> planned = MakePlan(*state_, request);
  if (!planned.ok()) {
    state_->invalid_requests.fetch_add(1, std::memory_order_relaxed);
    Decision decision;
    decision.allowed = false;
    decision.checked = false;
    decision.error = planned.status();
    return state_->Finish(std::move(decision), done);
  }
  if (planned->ops.empty() && planned->quota_ops.empty()) {
    return state_->Finish(CombineVerdicts({}), done);
  }
  if (!planned->quota_ops.empty()) {
    if (std::optional<Decision> spent = SpentQuota(*state_, *planned)) {
      state_->quota_cache_rejections.fetch_add(1, std::memory_order_relaxed);
      return state_->Finish(std::move(spent).value(), done);
    }
  }
  auto plan = std::make_shared<Plan>(std::move(planned).value());
  Charges known = FromCache(plan->ops, state_->charge_rules);
  if (known.from_cache) {
    state_->cache_rejections.fetch_add(1, std::memory_order_relaxed);
    return state_->Finish(DecisionOf(*state_, *plan, known), done);
  }
  // The decision is counted once, when it is final: after the quotas, when there are any.
  auto decided = [state = state_, plan, done = std::move(done)](Charges charges) mutable {
    Decision decision = DecisionOf(*state, *plan, charges);
    if (plan->quota_ops.empty()) return state->Finish(std::move(decision), done);
    ThenQuotas(state, plan, std::move(charges), std::move(decision), std::move(done));
  };
  if (plan->ops.empty()) return decided(std::move(known));
  // The ops go to the store without a copy unless the quotas may need their tokens given back.
  std::vector<BucketOp> ops = plan->quota_ops.empty() ? std::move(plan->ops) : plan->ops;
  Charge(state_->store, std::move(ops), state_->charge_rules, std::move(known), std::move(decided));
}

void Limiter::Report(const Request& request, const ReportedCost& cost,
                     DecisionCallback done) const {
  Result<Plan> planned = MakePlan(*state_, request, &cost);
  if (!planned.ok() || planned->ops.empty()) {
    Decision decision = CombineVerdicts({});
    if (!planned.ok()) {
      decision.checked = false;
      decision.error = planned.status();
    }
    return done(std::move(decision));
  }
  // A report is never refused: every bucket is charged, and the over-limit cache not asked.
  const ChargeRules charge_all;
  auto plan = std::make_shared<Plan>(std::move(planned).value());
  Charges known = FromCache(plan->ops, charge_all);
  std::vector<BucketOp> ops = std::move(plan->ops);  // the verdicts need only rules and limits
  Charge(state_->store, std::move(ops), charge_all, std::move(known),
         [state = state_, plan, done = std::move(done)](const Charges& charges) {
           if (charges.error.ok()) {
             return done(CombineVerdicts(ToVerdicts(state->rules, *plan, charges)));
           }
           state->store_errors.fetch_add(1, std::memory_order_relaxed);
           Decision decision;
           decision.checked = false;
           decision.error = charges.error;
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
