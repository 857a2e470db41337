// A clock that moves only when a test moves it.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "sluice/clock.h"

namespace sluice::testing {

class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ms = 0) : now_ns_(start_ms * 1'000'000) {}

  TimePoint Now() const override {
    return TimePoint(Duration(now_ns_.load(std::memory_order_relaxed)));
  }

  // Timers over this clock wake every millisecond to see whether the test moved it.
  Duration RealWait(Duration remaining) const override {
    return std::min<Duration>(remaining, std::chrono::milliseconds(1));
  }

  // Moves the clock forward (or backward, to test clock steps) by `delta_ms`.
  void Advance(int64_t delta_ms) { Advance(std::chrono::milliseconds(delta_ms)); }
  void Advance(Duration delta) { now_ns_.fetch_add(delta.count(), std::memory_order_relaxed); }

  // Sets the clock to `now_ms`.
  void Set(int64_t now_ms) { now_ns_.store(now_ms * 1'000'000, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> now_ns_;
};

}  // namespace sluice::testing
