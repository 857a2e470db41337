#include "rls/service.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <optional>

#include "core/charging.h"
#include "http/metrics.h"

namespace sluice::rls {

namespace {

// How a call's ops are charged: as rls.policy says, each descriptor answering for itself (the
// over-limit cache answers a descriptor, not the call), a descriptor repeated in a call counted
// in turn, and every hit counted, over the limit too, as envoyproxy/ratelimit counts them.
ChargeRules ChargeRulesOf(const ServiceOptions& options) {
  ChargeRules rules;
  rules.policy = options.policy;
  rules.over_limit_cache = options.over_limit_cache;
  rules.cached = CachedOverLimit::kAnswersItsOp;
  rules.keys_may_repeat = true;
  rules.look_past_stop = true;
  rules.refused_pay_own = true;
  return rules;
}

// Each op's reply as the response tells it: after a refund, what its bucket holds then.
std::vector<BucketReply> RepliesOf(const Charges& charges) {
  std::vector<BucketReply> replies;
  replies.reserve(charges.ops.size());
  for (const OpCharge& op : charges.ops) {
    replies.push_back(op.reply);
    if (op.refunded) {
      replies.back().remaining = op.refunded->remaining;
      replies.back().reset_ms = op.refunded->reset_ms;
    }
  }
  return replies;
}

// Counts the values of the descriptors `response` says are over their limits, under each one's
// limit.
void RecordRejections(const Plan& plan, const RateLimitResponse& response, http::TopRejected& top,
                      int64_t now_ms) {
  for (size_t i = 0; i < plan.descriptors.size(); ++i) {
    const MatchedDescriptor& p = plan.descriptors[i];
    if (p.kind != MatchedDescriptor::Kind::kLimited || p.counted.empty() ||
        response.statuses(static_cast<int>(i)).code() != RateLimitResponse::OVER_LIMIT) {
      continue;
    }
    if (http::RejectedValues* values = top.ForLimit(LimitLabel(plan, p))) {
      values->Record(http::DescriptorValue(p.counted), now_ms);
    }
  }
}

// The response for the replies, its rejections counted.
RateLimitResponse Checked(const Plan& plan, const std::vector<BucketReply>& replies,
                          const ServiceOptions& options) {
  RateLimitResponse response = Respond(plan, replies, options.response_headers);
  if (options.top_rejected && response.overall_code() == RateLimitResponse::OVER_LIMIT) {
    RecordRejections(plan, response, *options.top_rejected, options.clock->NowMs());
  }
  return response;
}

// The response to a call once the store has answered its ops, or failed.
void Answer(const Plan& plan, const Charges& charges, const std::vector<BucketReply>& replies,
            const ServiceOptions& options, http::ThrottledLog& store_errors,
            const ResponseCallback& done) {
  if (charges.error.ok()) return done(Checked(plan, replies, options));
  if (charges.error.code() == StatusCode::kInvalidArgument) {
    return done(charges.error);  // the request's fault, not the store's: no failure policy
  }
  store_errors.Warn("rate limit store unavailable (rate limit service), rls.failure decides",
                    charges.error.ToString());
  if (options.failure == config::RlsFailure::kError) {
    // The code says what happened; the store's address and error text stay in the log.
    return done(Status(charges.error.code(), "rate limit store unavailable"));
  }
  done(RespondUnchecked(plan, options.failure == config::RlsFailure::kOpen));
}

}  // namespace

Service::Service(std::vector<std::shared_ptr<Store>> stores,
                 std::shared_ptr<const DescriptorMatcher> matcher, ServiceOptions options)
    : stores_(std::move(stores)) {
  assert(!stores_.empty());  // a call picks one by index
  Reconfigure(std::move(matcher), std::move(options));
}

void Service::Reconfigure(std::shared_ptr<const DescriptorMatcher> matcher,
                          ServiceOptions options) {
  options.clock = ClockOrSteady(std::move(options.clock));
  auto next = std::make_shared<Snapshot>();
  next->matcher = std::move(matcher);
  next->charge_rules = ChargeRulesOf(options);
  next->options = std::move(options);
  next->matcher->ForEachLimit(
      [&](const std::string& domain, const std::string& path, const RateLimitPolicy& limit) {
        next->counters[&limit] = limit_stats_.For(domain, limit.name.empty() ? path : limit.name);
        if (!next->own_limits.contains(domain)) {
          next->own_limits[domain] = limit_stats_.For(domain, kRequestLimitLabel);
        }
      });
  MutexLock lock(&mutex_);
  current_ = std::move(next);
}

std::shared_ptr<const Service::Snapshot> Service::Current() const {
  MutexLock lock(&mutex_);
  return current_;
}

ServiceStats Service::Stats() const { return {cache_answers_.load(std::memory_order_relaxed)}; }

std::vector<LimitCounters*> Service::CountersOf(const Snapshot& snapshot, const Plan& plan,
                                                std::string_view domain) {
  std::vector<LimitCounters*> counters(plan.descriptors.size());
  for (size_t i = 0; i < plan.descriptors.size(); ++i) {
    const MatchedDescriptor& p = plan.descriptors[i];
    if (p.kind != MatchedDescriptor::Kind::kLimited) continue;
    if (p.configured == nullptr) {
      auto it = snapshot.own_limits.find(domain);
      if (it != snapshot.own_limits.end()) counters[i] = it->second;
    } else if (auto it = snapshot.counters.find(p.configured); it != snapshot.counters.end()) {
      counters[i] = it->second;
    }
  }
  return counters;
}

void Service::Count(const Snapshot& snapshot, const Plan& plan, std::string_view domain,
                    const Charges& charges, const std::vector<BucketReply>& replies) {
  const std::vector<LimitCounters*> counters = CountersOf(snapshot, plan, domain);
  if (charges.error.ok()) {
    return CountCall(plan, counters, charges, replies, snapshot.options.near_limit_ratio);
  }
  if (charges.error.code() == StatusCode::kInvalidArgument) return;
  CountUnchecked(plan, counters);
  call_store_errors_[static_cast<size_t>(charges.error.code())].fetch_add(
      1, std::memory_order_relaxed);
  switch (snapshot.options.failure) {
    case config::RlsFailure::kOpen:
      failure_allowed_.fetch_add(1, std::memory_order_relaxed);
      break;
    case config::RlsFailure::kClosed:
      failure_rejected_.fetch_add(1, std::memory_order_relaxed);
      break;
    case config::RlsFailure::kError:
      failure_error_.fetch_add(1, std::memory_order_relaxed);
      break;
  }
}

std::string Service::MetricsText() const {
  std::string out = limit_stats_.Render();
  auto get = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  http::RenderFamily(out, "sluice_rls_failure_policy_total",
                     "Rate limit service calls rls.failure answered while the store could not: "
                     "OK, OVER_LIMIT, or an error.",
                     {{R"(decision="allowed")", get(failure_allowed_)},
                      {R"(decision="rejected")", get(failure_rejected_)},
                      {R"(decision="error")", get(failure_error_)}});
  http::Series errors;
  for (size_t code = 1; code < call_store_errors_.size(); ++code) {
    const auto status = static_cast<StatusCode>(code);
    if (status == StatusCode::kInvalidArgument) continue;  // the call's fault, not the store's
    std::string label = StatusCodeName(status);
    std::replace(label.begin(), label.end(), ' ', '_');
    errors.emplace_back("code=\"" + label + "\"", get(call_store_errors_[code]));
  }
  http::RenderFamily(out, "sluice_rls_store_errors_total",
                     "Rate limit service calls the store could not answer, by the reason.", errors);
  http::RenderFamily(out, "sluice_rls_calls_shed_total",
                     "Rate limit service calls refused at once (gRPC RESOURCE_EXHAUSTED, /json "
                     "503) because rls.max_calls_in_flight calls were waiting for the store.",
                     {{"", get(shed_)}});
  http::RenderFamily(out, "sluice_rls_calls_in_flight",
                     "Rate limit service calls waiting for the store now.",
                     {{"", in_flight_.load(std::memory_order_relaxed)}}, "gauge");
  return out;
}

void Service::ShouldRateLimit(const RateLimitRequest& request, ResponseCallback done,
                              std::optional<size_t> loop) {
  auto snapshot = Current();
  const ServiceOptions& options = snapshot->options;
  Result<Plan> planned =
      PlanRequest(*snapshot->matcher, request, options.key_prefix, options.quota_mode);
  if (!planned.ok()) return done(planned.status());
  auto plan = std::make_shared<const Plan>(std::move(planned).value());
  Charges known = FromCache(plan->ops, snapshot->charge_rules);
  cache_answers_.fetch_add(known.cache_answers, std::memory_order_relaxed);
  if (plan->ops.empty() || known.from_cache) {
    const std::vector<BucketReply> replies = RepliesOf(known);
    Count(*snapshot, *plan, request.domain(), known, replies);
    return done(Checked(*plan, replies, options));
  }
  if (in_flight_.fetch_add(1, std::memory_order_relaxed) >= options.max_calls_in_flight) {
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    shed_.fetch_add(1, std::memory_order_relaxed);
    shed_log_.Warn("rate limit service overloaded",
                   "rls.max_calls_in_flight (" + std::to_string(options.max_calls_in_flight) +
                       ") calls wait for the store; refusing more");
    return done(Status::ResourceExhausted("too many calls in flight"));
  }
  const size_t which = loop ? *loop : next_store_.fetch_add(1, std::memory_order_relaxed);
  Charge(stores_[which % stores_.size()], plan->ops, snapshot->charge_rules, std::move(known),
         [this, plan, snapshot, domain = request.domain(),
          done = std::move(done)](const Charges& charges) {
           const std::vector<BucketReply> replies = RepliesOf(charges);
           Count(*snapshot, *plan, domain, charges, replies);
           Answer(*plan, charges, replies, snapshot->options, store_errors_, done);
           // Last: a drain that sees no call in flight may stop the loops.
           in_flight_.fetch_sub(1, std::memory_order_relaxed);
         });
}

}  // namespace sluice::rls
