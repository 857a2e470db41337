// The limiter: checks one request against all of its rules and decides.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sluice/decision.h"
#include "sluice/over_limit_cache.h"
#include "sluice/quota_store.h"
#include "sluice/request.h"
#include "sluice/rule.h"
#include "sluice/status.h"
#include "sluice/store.h"

namespace sluice {

// What happens to a request's other rules when one of them rejects it.
enum class MultiRulePolicy {
  // All rules are sent together, in one round trip, and all are charged, even when one rejects:
  // a client that pushes past one limit drains its others too. Envoy's rate limit service does
  // the same.
  kChargeAll,
  // Rules are checked in order, one round trip each; none is charged after the first rejection.
  kStopAtFirst,
  // All rules are sent together; when the answer is no, a second call gives the tokens back to
  // the rules that allowed. A refund never raises a bucket above its capacity.
  kRefund,
  // All rules are sent together in one atomic script call that charges them only if every
  // enforced rule allows: one round trip, and no charge to undo. It needs every key on one server
  // (a single Redis, the memory store, or one cluster slot through a shared hash tag) and, on
  // Redis, one algorithm for all the request's rules; otherwise the check is made as kRefund
  // makes it, and the decision says so (fell_back_to_refund).
  kAllOrNothing,
};

// What a check decides when the store errors or does not answer in time.
enum class FailurePolicy {
  kOpen,    // allow: an outage of the store does not become an outage of the API
  kClosed,  // deny: no request passes unchecked
};

struct LimiterOptions {
  std::string key_prefix = "rl:";
  // Wrap each key's value in a Redis Cluster hash tag ("rl:second:{ak_abc123}"), so that the
  // buckets of rules that count by the same attribute share a slot: one call per check on a
  // cluster, and all-or-nothing without falling back.
  bool hash_tag_values = false;
  MultiRulePolicy policy = MultiRulePolicy::kChargeAll;
  FailurePolicy failure = FailurePolicy::kOpen;
  // When set, a bucket the store rejected is remembered until its retry time, and requests that
  // would take from it meanwhile are rejected without asking the store. Limiters may share one.
  std::shared_ptr<OverLimitCache> over_limit_cache = nullptr;
  // Where durable rules (Rule::durable) count; needed when a rule is durable. A request's durable
  // rules are asked, in one atomic take, only once every other rule has allowed it, so that a
  // rejected request never spends quota; when one of them rejects, the other rules' tokens follow
  // `policy` (given back under kRefund and kAllOrNothing, kept under the others). A quota the
  // store knows to be spent is rejected without asking it or the rate limit store.
  std::shared_ptr<QuotaStore> quota_store = nullptr;
  // What a check decides when the quota store errors or does not answer in time: closed by
  // default, since a quota that must never be exceeded is not waved through.
  FailurePolicy quota_failure = FailurePolicy::kClosed;
};

// Counters of a limiter's decisions, for metrics.
struct LimiterStats {
  uint64_t checks = 0;
  uint64_t allowed = 0;
  uint64_t rejected = 0;
  uint64_t store_errors = 0;      // checks the store failed (error, timeout, overload)
  uint64_t failure_policy = 0;    // decisions the failure policy made
  uint64_t invalid_requests = 0;  // requests refused for a bad attribute value
  uint64_t cache_rejections = 0;  // rejected by the over-limit cache, the store not asked
  uint64_t refund_fallbacks = 0;  // all-or-nothing checks the store could not make in one step
  uint64_t quota_errors = 0;      // checks the quota store failed (error, timeout, overload)
  uint64_t quota_cache_rejections = 0;  // rejected as spent quotas, no store asked
};

using DecisionCallback = std::function<void(Decision)>;

// Checks requests against a fixed list of rules on one store. For each rule whose attribute the
// request has, it builds the bucket key "<prefix><bucket>:<value>" and asks the store; the
// answers are combined by CombineVerdicts. Safe to call from many threads at once.
class Limiter {
 public:
  // Validates every rule, and that no two rules share a name or a bucket family. Rules that
  // count locally (synced, leased) need `store` to be a LocalCountingStore; durable rules need
  // LimiterOptions::quota_store.
  static Result<std::unique_ptr<Limiter>> Create(std::vector<Rule> rules, LimiterOptions options,
                                                 std::shared_ptr<Store> store);
  ~Limiter();

  // Decides `request` and calls `done` once, inline or on the store's thread (AsyncCheck in
  // <sluice/limiter_async.h> takes an Asio completion token instead). Store errors
  // become a decision made by the failure policy (checked = false, error set). A request with
  // an attribute value that cannot be made a key is refused: allowed = false, checked = false,
  // error kInvalidArgument, whatever the failure policy.
  void Check(const Request& request, DecisionCallback done) const;

  // Check, waiting for the decision. Must not be called on the store's own thread.
  Decision CheckBlocking(const Request& request) const;

  // What a request cost one of its rules, known after the work: the tokens to charge, or none.
  using ReportedCost = std::function<std::optional<int64_t>(const Rule&)>;

  // Charges what `request` turned out to cost, after the work was done: to each of the
  // request's rules that is a token bucket counted in the store and for which `cost` gives a
  // number (in [0, Limit::kMaxCapacity]), that many tokens, into debt if need be: it is too late
  // to refuse. One store call. Each verdict says what is left (0 while in debt) and is allowed
  // unless its bucket is in debt, so the decision says whether the request's buckets would take
  // another request now; it never refuses the report itself. A store error gives checked =
  // false with the error (the charge is lost), whatever the failure policy. Other rules have no
  // verdict.
  void Report(const Request& request, const ReportedCost& cost, DecisionCallback done) const;

  const std::vector<Rule>& rules() const;
  const LimiterOptions& options() const;
  LimiterStats Stats() const;

  struct State;  // the implementation's; shared with checks still in flight

 private:
  explicit Limiter(std::shared_ptr<State> state);

  std::shared_ptr<State> state_;
};

}  // namespace sluice
