// The Limiter's checks and reports with any Asio completion token: a callback,
// asio::use_awaitable, asio::use_future. Apart from <sluice/limiter.h> so that a program that
// only calls back does not include Asio.
#pragma once

#include <utility>

#include "sluice/async_callback.h"
#include "sluice/limiter.h"

namespace sluice {

// Limiter::Check, completing `token`. The completion runs on the token's associated executor,
// never inside this call (AsyncFromCallback).
template <typename CompletionToken>
auto AsyncCheck(const Limiter& limiter, const Request& request, CompletionToken&& token) {
  return AsyncFromCallback<Decision>(
      // A copy: an awaitable starts only when awaited, maybe after `request` is gone.
      [&limiter, request](DecisionCallback done) { limiter.Check(request, std::move(done)); },
      std::forward<CompletionToken>(token));
}

// Limiter::Report, completing `token`, as AsyncCheck.
template <typename CompletionToken>
auto AsyncReport(const Limiter& limiter, const Request& request, Limiter::ReportedCost cost,
                 CompletionToken&& token) {
  return AsyncFromCallback<Decision>(
      [&limiter, request, cost = std::move(cost)](DecisionCallback done) {
        limiter.Report(request, cost, std::move(done));
      },
      std::forward<CompletionToken>(token));
}

}  // namespace sluice
