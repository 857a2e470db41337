#include "sluice/latency_histogram.h"

#include <algorithm>

namespace sluice {

LatencyCounts& LatencyCounts::operator+=(const LatencyCounts& other) {
  for (size_t i = 0; i < buckets.size(); ++i) buckets[i] += other.buckets[i];
  count += other.count;
  sum_seconds += other.sum_seconds;
  return *this;
}

void LatencyHistogram::Observe(double seconds) {
  const auto& bounds = LatencyCounts::kBounds;
  const auto bucket =
      static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), seconds) - bounds.begin());
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_micros_.fetch_add(static_cast<uint64_t>(std::max(seconds, 0.0) * 1e6),
                        std::memory_order_relaxed);
}

LatencyCounts LatencyHistogram::Counts() const {
  LatencyCounts counts;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    counts.buckets[i] = buckets_[i].load(std::memory_order_relaxed);
  }
  counts.count = count_.load(std::memory_order_relaxed);
  counts.sum_seconds = static_cast<double>(sum_micros_.load(std::memory_order_relaxed)) / 1e6;
  return counts;
}

}  // namespace sluice
