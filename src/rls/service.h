// ShouldRateLimit, apart from its transports: the descriptor configuration in force, the stores,
// and the failure policy. The gRPC server and the JSON handler both call it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include "config/rls_config.h"
#include "rls/descriptor_matcher.h"
#include "rls/rate_limit_plan.h"
#include "sluice/status.h"
#include "sluice/store.h"

namespace sluice::rls {

// What a call is answered with, beside the descriptors.
struct ServiceOptions {
  std::string key_prefix = "rl:";
  config::RlsFailure failure = config::RlsFailure::kOpen;
  std::optional<config::RlsHeaderNames> response_headers;
};

// Called once with the response, or with kInvalidArgument for a malformed request, or with the
// store's error when the failure setting is kError.
using ResponseCallback = std::function<void(Result<RateLimitResponse>)>;

// Safe to call from many threads; the configuration can be replaced while calls are in flight
// (they finish with the one they started with).
class Service {
 public:
  // `stores` are used in turn, one per call (each event loop's own connection).
  Service(std::vector<std::shared_ptr<Store>> stores,
          std::shared_ptr<const DescriptorMatcher> matcher, ServiceOptions options);

  void Apply(std::shared_ptr<const DescriptorMatcher> matcher, ServiceOptions options);

  // Answers `request` with one Store::Apply for all its limited descriptors. `done` runs inline
  // or on a store's thread, and must not block.
  void ShouldRateLimit(const RateLimitRequest& request, ResponseCallback done);

  // ShouldRateLimit with any Asio completion token; the completion is posted to the token's
  // associated executor.
  template <typename CompletionToken>
  auto AsyncShouldRateLimit(const RateLimitRequest& request, CompletionToken&& token) {
    return boost::asio::async_initiate<CompletionToken, void(Result<RateLimitResponse>)>(
        [this](auto handler, const RateLimitRequest& req) {
          auto work = boost::asio::make_work_guard(boost::asio::get_associated_executor(handler));
          auto shared = std::make_shared<decltype(handler)>(std::move(handler));
          ShouldRateLimit(req, [shared, work](Result<RateLimitResponse> response) mutable {
            boost::asio::post(work.get_executor(),
                              [shared, response = std::move(response)]() mutable {
                                (*shared)(std::move(response));
                              });
            work.reset();
          });
        },
        token, request);
  }

  // Calls waiting for the store now.
  size_t InFlight() const { return in_flight_.load(std::memory_order_relaxed); }

 private:
  struct Snapshot {
    std::shared_ptr<const DescriptorMatcher> matcher;
    ServiceOptions options;
  };

  std::shared_ptr<const Snapshot> Current() const;

  std::vector<std::shared_ptr<Store>> stores_;
  std::atomic<size_t> next_store_{0};
  mutable std::mutex mutex_;
  std::shared_ptr<const Snapshot> current_;
  std::atomic<size_t> in_flight_{0};
};

}  // namespace sluice::rls
