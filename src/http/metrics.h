// Counters and histograms of a running gateway, rendered in Prometheus's text format.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "sluice/decision.h"
#include "sluice/rule.h"

namespace sluice::http {

// A latency histogram with fixed buckets, in seconds. Thread-safe.
class LatencyHistogram {
 public:
  static constexpr std::array<double, 12> kBounds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                     0.01,   0.025,   0.05,   0.1,   0.25,   1.0};
  void Observe(double seconds);
  // Appends the histogram's lines under `name`.
  void Render(const std::string& name, std::string& out) const;

 private:
  std::array<std::atomic<uint64_t>, kBounds.size() + 1> counts_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_micros_{0};
};

// Everything /metrics reports. Thread-safe.
class Metrics {
 public:
  // Counts a decision: per rule and outcome, shadow rejections, failure-policy decisions, store
  // errors and invalid requests; `seconds` is how long the check took.
  void RecordDecision(const Decision& decision, const std::vector<Rule>& rules, double seconds);

  void RecordUpstream(bool ok, double seconds);

  // The whole text; `gauges` adds current values (name, value) such as requests in flight.
  std::string Render(const std::vector<std::pair<std::string, double>>& gauges) const;

 private:
  void Count(const std::string& series);

  mutable std::mutex mutex_;
  std::map<std::string, uint64_t> counters_;  // full series name with labels -> count
  LatencyHistogram check_latency_;
  LatencyHistogram upstream_latency_;
};

}  // namespace sluice::http
