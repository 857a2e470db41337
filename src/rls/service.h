// ShouldRateLimit, apart from its transports: the descriptor configuration in force, the stores,
// and the failure policy. The gRPC server and the JSON handler both call it.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sluice/async_callback.h"
#include "sluice/clock.h"
#include "sluice/limiter.h"
#include "sluice/mutex.h"
#include "sluice/over_limit_cache.h"
#include "sluice/thread_annotations.h"

#include "config/rls_config.h"
#include "core/charging.h"
#include "http/rejected_values.h"
#include "http/throttled_log.h"
#include "rls/descriptor_matcher.h"
#include "rls/limit_stats.h"
#include "rls/rate_limit_plan.h"
#include "sluice/status.h"
#include "sluice/store.h"

namespace sluice::rls {

// What a call is answered with, beside the descriptors.
struct ServiceOptions {
  std::string key_prefix = "rl:";
  config::RlsFailure failure = config::RlsFailure::kOpen;
  std::optional<config::RlsHeaderNames> response_headers;
  MultiRulePolicy policy = MultiRulePolicy::kChargeAll;  // what a call over its limit pays
  // Buckets known to be in debt, answered OVER_LIMIT without a store call (their hits not
  // sent) until they are out of it; none: every call asks the store.
  std::shared_ptr<OverLimitCache> over_limit_cache;
  bool quota_mode = false;        // every limit in quota mode
  double near_limit_ratio = 0.8;  // for sluice_rls_near_limit_total
  // Where the descriptor values over their limits are counted, for /debug/top; none: nowhere.
  std::shared_ptr<http::TopRejected> top_rejected;
  // Calls waiting for the store at once; past it a call is refused with kResourceExhausted.
  size_t max_calls_in_flight = 10'000;
  // What the values over their limits are remembered on; null: the process's steady clock.
  std::shared_ptr<const Clock> clock;
};

// Counters of a service's calls, for metrics.
struct ServiceStats {
  // Descriptors answered OVER_LIMIT by the over-limit cache, their hits not sent to the store.
  uint64_t over_limit_with_local_cache = 0;
};

// Called once with the response, or with kInvalidArgument for a malformed request, with
// kResourceExhausted for a call past max_calls_in_flight, or with the store's error when the
// failure setting is kError.
using ResponseCallback = std::function<void(Result<RateLimitResponse>)>;

// Safe to call from many threads; the configuration can be replaced while calls are in flight
// (they finish with the one they started with).
class Service {
 public:
  // `stores`: each event loop's own connection, by the loop's index (one shared by every loop
  // may stand for them all); used in turn by callers off the loops, one per call.
  Service(std::vector<std::shared_ptr<Store>> stores,
          std::shared_ptr<const DescriptorMatcher> matcher, ServiceOptions options);

  // Puts `matcher` and `options` in force for the calls that start from now on.
  void Reconfigure(std::shared_ptr<const DescriptorMatcher> matcher, ServiceOptions options)
      SLUICE_EXCLUDES(mutex_);

  // Answers `request`: its limited descriptors' buckets charged as the policy says (Charge; one
  // store call unless a descriptor is over its limit or repeats), those the over-limit cache
  // knows to be in debt answered without the store. A call that needs the store while
  // max_calls_in_flight calls wait for it is refused at once, never queued, so that a slow
  // store cannot make calls pile up without bound. `done` runs inline or on a store's thread,
  // and must not block. `loop`: the event loop the caller runs on, whose own store is used, so
  // that the call is not handed to another loop's thread; none: the stores in turn.
  void ShouldRateLimit(const RateLimitRequest& request, ResponseCallback done,
                       std::optional<size_t> loop = std::nullopt) SLUICE_EXCLUDES(mutex_);

  // ShouldRateLimit with any Asio completion token; the completion runs on the token's
  // associated executor, never inside this call (AsyncFromCallback).
  template <typename CompletionToken>
  auto AsyncShouldRateLimit(const RateLimitRequest& request, std::optional<size_t> loop,
                            CompletionToken&& token) {
    return AsyncFromCallback<Result<RateLimitResponse>>(
        // A copy: an awaitable starts only when awaited, maybe after `request` is gone.
        [this, request, loop](ResponseCallback done) {
          ShouldRateLimit(request, std::move(done), loop);
        },
        std::forward<CompletionToken>(token));
  }

  // Calls waiting for the store now.
  size_t InFlight() const { return in_flight_.load(std::memory_order_relaxed); }

  ServiceStats Stats() const;

  // The per-limit statistics, the failure setting's decisions and the store's errors, in
  // Prometheus's text format.
  std::string MetricsText() const;

 private:
  // The configuration in force, swapped whole by Reconfigure; a call keeps the one it started
  // with.
  struct Snapshot {
    std::shared_ptr<const DescriptorMatcher> matcher;
    ServiceOptions options;
    ChargeRules charge_rules;  // from `options`
    // The counters of each configured limit, and of the limits requests bring, by domain.
    std::unordered_map<const RateLimitPolicy*, LimitCounters*> counters;
    std::map<std::string, LimitCounters*, std::less<>> own_limits;
  };

  // The counters of each of the plan's descriptors (null where nothing counts).
  static std::vector<LimitCounters*> CountersOf(const Snapshot& snapshot, const Plan& plan,
                                                std::string_view domain);

  // Counts a call in the statistics: `charges` says what became of each plan op (or the store's
  // error), `replies` what each op answered.
  void Count(const Snapshot& snapshot, const Plan& plan, std::string_view domain,
             const Charges& charges, const std::vector<BucketReply>& replies);

  std::shared_ptr<const Snapshot> Current() const SLUICE_EXCLUDES(mutex_);

  std::vector<std::shared_ptr<Store>> stores_;
  std::atomic<size_t> next_store_{0};
  mutable Mutex mutex_;
  std::shared_ptr<const Snapshot> current_ SLUICE_GUARDED_BY(mutex_);
  std::atomic<size_t> in_flight_{0};
  std::atomic<uint64_t> shed_{0};  // calls refused past max_calls_in_flight
  http::ThrottledLog shed_log_;
  std::atomic<uint64_t> cache_answers_{0};
  http::ThrottledLog store_errors_;
  LimitStats limit_stats_;
  // Calls the failure setting answered: OK, OVER_LIMIT, or with an error.
  std::atomic<uint64_t> failure_allowed_{0};
  std::atomic<uint64_t> failure_rejected_{0};
  std::atomic<uint64_t> failure_error_{0};
  // By StatusCode: why the store could not answer a call.
  std::array<std::atomic<uint64_t>, static_cast<size_t>(StatusCode::kFailedPrecondition) + 1>
      call_store_errors_{};
};

}  // namespace sluice::rls
