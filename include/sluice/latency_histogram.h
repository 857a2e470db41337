// A latency histogram with fixed bounds, in seconds, recorded without a lock from any thread:
// for the store's round trips and the gateway's metrics alike.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace sluice {

// What a histogram holds at one moment; two of them add up (the same node seen from several
// event loops' connections).
struct LatencyCounts {
  static constexpr std::array<double, 12> kBounds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                     0.01,   0.025,   0.05,   0.1,   0.25,   1.0};
  // Per bucket, not cumulative: buckets[i] counts values in (kBounds[i-1], kBounds[i]]; the last,
  // those over every bound.
  std::array<uint64_t, kBounds.size() + 1> buckets{};
  uint64_t count = 0;
  double sum_seconds = 0;

  LatencyCounts& operator+=(const LatencyCounts& other);
};

// Thread-safe.
class LatencyHistogram {
 public:
  void Observe(double seconds);
  LatencyCounts Counts() const;

 private:
  std::array<std::atomic<uint64_t>, LatencyCounts::kBounds.size() + 1> buckets_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_micros_{0};  // integral: an atomic double would need a CAS loop
};

}  // namespace sluice
