// A clock that moves only when a test moves it.
#pragma once

#include <atomic>
#include <cstdint>

#include "sluice/clock.h"

namespace sluice::testing {

class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ms = 0) : now_ms_(start_ms) {}

  int64_t NowMs() const override { return now_ms_.load(std::memory_order_relaxed); }

  // Moves the clock forward (or backward, to test clock steps) by `delta_ms`.
  void Advance(int64_t delta_ms) { now_ms_.fetch_add(delta_ms, std::memory_order_relaxed); }

  // Sets the clock to `now_ms`.
  void Set(int64_t now_ms) { now_ms_.store(now_ms, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> now_ms_;
};

}  // namespace sluice::testing
