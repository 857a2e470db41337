// Counters and histograms of a running gateway, rendered in Prometheus's text format. Recording
// takes no lock: every counter is an atomic found before the request (a rule's counters when
// its configuration is applied).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "sluice/decision.h"
#include "sluice/local_counting_store.h"
#include "sluice/rule.h"

namespace sluice::http {

// A histogram's buckets (the last one past every bound, none cumulative), count and sum.
inline constexpr size_t kHistogramBuckets = 13;
struct HistogramCounts {
  std::array<uint64_t, kHistogramBuckets> buckets{};
  uint64_t count = 0;
  uint64_t sum_micros = 0;
};

// A latency histogram with fixed buckets, in seconds. Thread-safe.
class LatencyHistogram {
 public:
  static constexpr std::array<double, 12> kBounds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                     0.01,   0.025,   0.05,   0.1,   0.25,   1.0};
  void Observe(double seconds);
  // Appends the histogram's lines under `name`.
  void Render(const std::string& name, std::string& out) const;
  // What it holds now, for the status page's recent latencies.
  HistogramCounts Counts() const;

 private:
  std::array<std::atomic<uint64_t>, kBounds.size() + 1> counts_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_micros_{0};
};

// The counters of one rule, kept across reloads for as long as the process runs.
struct RuleCounters {
  std::atomic<uint64_t> allowed{0};
  std::atomic<uint64_t> rejected{0};
  std::atomic<uint64_t> shadow_rejections{0};
};

// The number of StatusCode values.
inline constexpr size_t kStatusCodes = static_cast<size_t>(StatusCode::kFailedPrecondition) + 1;

// Everything /metrics reports. Thread-safe.
class Metrics {
 public:
  // The counters of the rule named `name`, made on first use. The pointer stays valid as long
  // as the metrics do.
  RuleCounters* ForRule(const std::string& name);

  // Counts a decision: per rule and outcome, shadow rejections, failure-policy decisions, store
  // errors and invalid requests; `rules[i]` counts the limiter's rule i; `seconds` is how long
  // the check took.
  void RecordDecision(const Decision& decision, const std::vector<RuleCounters*>& rules,
                      double seconds);

  void RecordUpstream(bool ok, double seconds);

  // The whole text; `gauges` adds current values (name, value) such as requests in flight.
  std::string Render(const std::vector<std::pair<std::string, double>>& gauges) const;

  // The counters of the local counts in force (synced and leased rules), in the same format;
  // they start again from zero when a reload makes new local counts.
  static std::string RenderLocalCounting(const LocalCountingStats& stats);

  // For the status page: the store's errors so far, of every code, and its checks' latencies.
  uint64_t StoreErrors() const;
  HistogramCounts CheckLatency() const { return check_latency_.Counts(); }

 private:
  std::atomic<uint64_t> requests_allowed_{0};
  std::atomic<uint64_t> requests_rejected_{0};
  std::atomic<uint64_t> invalid_requests_{0};
  // By StatusCode: why the store could not be asked.
  std::array<std::atomic<uint64_t>, kStatusCodes> store_errors_{};
  std::atomic<uint64_t> failure_allowed_{0};
  std::atomic<uint64_t> failure_rejected_{0};
  std::atomic<uint64_t> upstream_errors_{0};
  std::atomic<uint64_t> cache_rejections_{0};
  std::atomic<uint64_t> refund_fallbacks_{0};  // all-or-nothing checks made as refund
  LatencyHistogram check_latency_;
  LatencyHistogram upstream_latency_;

  mutable std::mutex rules_mutex_;  // guards the map, not the counters
  std::map<std::string, std::unique_ptr<RuleCounters>> rules_;
};

}  // namespace sluice::http
