// The last minutes of a gateway, for its status page: samples of the cumulative metrics counters
// taken once a second, turned into rates and recent latencies when read. Pure logic, time passed
// in; not thread-safe (the gateway holds a lock around it).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/metrics.h"
#include "sluice/latency_histogram.h"

namespace sluice::http {

// A rule's cumulative counts.
struct RuleCounts {
  uint64_t allowed = 0;
  uint64_t rejected = 0;
};

// Cumulative counters at one second.
struct CounterSample {
  int64_t second = 0;
  std::vector<std::pair<std::string, RuleCounts>> rules;
  uint64_t store_errors = 0;
  LatencyCounts check_latency;
};

// A rule's rates between two samples, per second.
struct RatePoint {
  int64_t second = 0;  // the later sample's
  double allowed = 0;
  double rejected = 0;
};

// The store's checks over a recent stretch.
struct RecentLatency {
  uint64_t checks = 0;
  uint64_t store_errors = 0;
  double mean_s = 0;
  // Upper bounds of the histogram buckets in which the quantiles fall; +inf past the last bound.
  double p50_s = 0;
  double p99_s = 0;
};

class StatusHistory {
 public:
  // Keeps `seconds` + 1 samples.
  explicit StatusHistory(size_t seconds = 180);

  // Adds a sample; one for a second already sampled replaces it, an older one is dropped.
  void Add(CounterSample sample);

  // The rates of `rule` between consecutive samples, oldest first; 0 where a counter went back
  // (the rule was recreated) or the rule was not yet there.
  std::vector<RatePoint> Rates(std::string_view rule) const;

  // The checks between the newest sample and the one `seconds` before it (or the oldest).
  RecentLatency Recent(int64_t seconds) const;

  size_t size() const { return samples_.size(); }

 private:
  size_t keep_;
  std::deque<CounterSample> samples_;
};

}  // namespace sluice::http
