#include "rls/service.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "http/metrics.h"
#include "rls/call_charging.h"

namespace sluice::rls {

Service::Service(std::vector<std::shared_ptr<Store>> stores,
                 std::shared_ptr<const DescriptorMatcher> matcher, ServiceOptions options)
    : stores_(std::move(stores)) {
  Apply(std::move(matcher), std::move(options));
}

void Service::Apply(std::shared_ptr<const DescriptorMatcher> matcher, ServiceOptions options) {
  auto next = std::make_shared<Snapshot>(Snapshot{std::move(matcher), std::move(options), {}, {}});
  next->matcher->ForEachLimit(
      [&](const std::string& domain, const std::string& path, const RateLimitPolicy& limit) {
        next->counters[&limit] = limit_stats_.For(domain, limit.name.empty() ? path : limit.name);
        if (!next->own_limits.contains(domain)) {
          next->own_limits[domain] = limit_stats_.For(domain, kRequestLimitLabel);
        }
      });
  const std::lock_guard lock(mutex_);
  current_ = std::move(next);
}

std::shared_ptr<const Service::Snapshot> Service::Current() const {
  const std::lock_guard lock(mutex_);
  return current_;
}

namespace {

// The ops of `plan` that go to the store, and the replies of those the over-limit cache answers.
struct CacheSplit {
  std::vector<BucketOp> sent;
  std::vector<std::optional<size_t>> sent_at;  // per plan op: its place in `sent`
  std::vector<BucketReply> replies;            // per plan op; those not sent are final
  uint64_t answered = 0;                       // ops the cache answered
};

// A bucket known to be in debt for `retry_ms` more: refused, nothing left, and full again a
// whole period after it is out of debt.
BucketReply InDebt(const BucketOp& op, int64_t retry_ms) {
  BucketReply reply;
  reply.retry_ms = retry_ms;
  reply.reset_ms = retry_ms + op.limit.period_ms;
  return reply;
}

CacheSplit SplitByCache(const Plan& plan, const ServiceOptions& options) {
  CacheSplit split;
  split.sent_at.resize(plan.ops.size());
  split.replies.resize(plan.ops.size());
  bool enforced_over = false;
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const BucketOp& op = plan.ops[i];
    const int64_t retry_ms =
        options.over_limit_cache && op.enforced ? options.over_limit_cache->RetryMs(op.key) : 0;
    if (retry_ms > 0) {
      split.replies[i] = InDebt(op, retry_ms);
      ++split.answered;
      enforced_over = true;
      continue;
    }
    split.sent_at[i] = split.sent.size();
    split.sent.push_back(op);
  }
  // The call is over its limit already: under a policy that spares the other descriptors, they
  // are only looked at.
  if (enforced_over && options.policy != MultiRulePolicy::kChargeAll) {
    for (BucketOp& op : split.sent) op.cost = 0;
  }
  return split;
}

// Remembers the enforced buckets the store left in debt, until they are out of it.
void RememberDebts(OverLimitCache& cache, const std::vector<BucketOp>& ops,
                   const std::vector<BucketReply>& replies) {
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].enforced && !replies[i].allowed && replies[i].retry_ms > 0) {
      cache.Remember(ops[i].key, replies[i].retry_ms);
    }
  }
}

// Counts the values of the descriptors `response` says are over their limits, under each one's
// limit.
void RecordRejections(const Plan& plan, const RateLimitResponse& response, http::TopRejected& top) {
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now().time_since_epoch())
                             .count();
  for (size_t i = 0; i < plan.descriptors.size(); ++i) {
    const PlannedDescriptor& p = plan.descriptors[i];
    if (p.kind != PlannedDescriptor::Kind::kLimited || p.counted.empty() ||
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
    RecordRejections(plan, response, *options.top_rejected);
  }
  return response;
}

// The response to a call once the store has answered the ops it was sent, or failed.
void Answer(const Plan& plan, const CacheSplit& split, const ServiceOptions& options,
            Result<std::vector<BucketReply>> replies, http::ThrottledLog& store_errors,
            const ResponseCallback& done) {
  if (replies.ok()) {
    if (options.over_limit_cache) RememberDebts(*options.over_limit_cache, split.sent, *replies);
    std::vector<BucketReply> all = split.replies;
    for (size_t i = 0; i < all.size(); ++i) {
      if (split.sent_at[i]) all[i] = (*replies)[*split.sent_at[i]];
    }
    done(Checked(plan, all, options));
  } else if (replies.status().code() == StatusCode::kInvalidArgument) {
    done(replies.status());  // the request's fault, not the store's: no failure policy
  } else {
    store_errors.Warn("rate limit store unavailable (rate limit service), rls.failure decides",
                      replies.status().ToString());
    if (options.failure == config::RlsFailure::kError) {
      // The code says what happened; the store's address and error text stay in the log.
      done(Status(replies.status().code(), "rate limit store unavailable"));
    } else {
      done(RespondUnchecked(plan, options.failure == config::RlsFailure::kOpen));
    }
  }
}

}  // namespace

ServiceStats Service::Stats() const { return {cache_answers_.load(std::memory_order_relaxed)}; }

std::vector<LimitCounters*> Service::CountersOf(const Snapshot& snapshot, const Plan& plan,
                                                std::string_view domain) {
  std::vector<LimitCounters*> counters(plan.descriptors.size());
  for (size_t i = 0; i < plan.descriptors.size(); ++i) {
    const PlannedDescriptor& p = plan.descriptors[i];
    if (p.kind != PlannedDescriptor::Kind::kLimited) continue;
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
                    const std::vector<std::optional<size_t>>& sent_at,
                    const Result<std::vector<BucketReply>>& replies) {
  const std::vector<LimitCounters*> counters = CountersOf(snapshot, plan, domain);
  if (replies.ok()) {
    return CountCall(plan, counters, sent_at, *replies, snapshot.options.near_limit_ratio);
  }
  if (replies.status().code() == StatusCode::kInvalidArgument) return;
  CountUnchecked(plan, counters);
  call_store_errors_[static_cast<size_t>(replies.status().code())].fetch_add(
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
  auto plan = std::make_shared<Plan>(std::move(planned).value());
  if (plan->ops.empty()) {
    Count(*snapshot, *plan, request.domain(), {}, std::vector<BucketReply>{});
    return done(Checked(*plan, {}, options));
  }
  auto split = std::make_shared<CacheSplit>(SplitByCache(*plan, options));
  cache_answers_.fetch_add(split->answered, std::memory_order_relaxed);
  if (split->sent.empty()) {
    Count(*snapshot, *plan, request.domain(), split->sent_at, std::vector<BucketReply>{});
    return done(Checked(*plan, split->replies, options));
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
  std::shared_ptr<Store> store = stores_[which % stores_.size()];
  std::vector<BucketOp> sent = split->sent;
  ChargeCall(std::move(store), options.policy, std::move(sent),
             [this, plan, split, snapshot, domain = request.domain(),
              done = std::move(done)](Result<std::vector<BucketReply>> replies) {
               Count(*snapshot, *plan, domain, split->sent_at, replies);
               Answer(*plan, *split, snapshot->options, std::move(replies), store_errors_, done);
               // Last: a drain that sees no call in flight may stop the loops.
               in_flight_.fetch_sub(1, std::memory_order_relaxed);
             });
}

}  // namespace sluice::rls
