#include "rls/service.h"

namespace sluice::rls {

Service::Service(std::vector<std::shared_ptr<Store>> stores,
                 std::shared_ptr<const DescriptorMatcher> matcher, ServiceOptions options)
    : stores_(std::move(stores)) {
  Apply(std::move(matcher), std::move(options));
}

void Service::Apply(std::shared_ptr<const DescriptorMatcher> matcher, ServiceOptions options) {
  auto next = std::make_shared<const Snapshot>(Snapshot{std::move(matcher), std::move(options)});
  const std::lock_guard lock(mutex_);
  current_ = std::move(next);
}

std::shared_ptr<const Service::Snapshot> Service::Current() const {
  const std::lock_guard lock(mutex_);
  return current_;
}

void Service::ShouldRateLimit(const RateLimitRequest& request, ResponseCallback done) {
  auto snapshot = Current();
  Result<Plan> planned = PlanRequest(*snapshot->matcher, request, snapshot->options.key_prefix);
  if (!planned.ok()) return done(planned.status());
  auto plan = std::make_shared<Plan>(std::move(planned).value());
  if (plan->ops.empty()) return done(Respond(*plan, {}, snapshot->options.response_headers));
  Store& store = *stores_[next_store_.fetch_add(1, std::memory_order_relaxed) % stores_.size()];
  in_flight_.fetch_add(1, std::memory_order_relaxed);
  std::vector<BucketOp> ops = plan->ops;
  store.Apply(std::move(ops), [this, plan, snapshot,
                               done = std::move(done)](Result<std::vector<BucketReply>> replies) {
    const ServiceOptions& options = snapshot->options;
    if (replies.ok()) {
      done(Respond(*plan, *replies, options.response_headers));
    } else if (replies.status().code() == StatusCode::kInvalidArgument) {
      done(replies.status());  // the request's fault, not the store's: no failure policy
    } else {
      store_errors_.Warn("rate limit store unavailable (rate limit service), rls.failure decides",
                         replies.status().ToString());
      if (options.failure == config::RlsFailure::kError) {
        // The code says what happened; the store's address and error text stay in the log.
        done(Status(replies.status().code(), "rate limit store unavailable"));
      } else {
        done(RespondUnchecked(*plan, options.failure == config::RlsFailure::kOpen));
      }
    }
    // Last: a drain that sees no call in flight may stop the loops.
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
  });
}

}  // namespace sluice::rls
