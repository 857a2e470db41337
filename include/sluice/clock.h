// Time, injected: code that needs the time takes a Clock, so that tests can control it.
#pragma once

#include <atomic>
#include <cstdint>

namespace sluice {

// A source of milliseconds. Implementations must be safe to call from many threads.
class Clock {
 public:
  virtual ~Clock() = default;

  // Milliseconds since some fixed origin. Only differences between readings matter.
  virtual int64_t NowMs() const = 0;
};

// The process's monotonic clock: never steps backwards, unaffected by NTP adjustments.
class SteadyClock final : public Clock {
 public:
  int64_t NowMs() const override;
};

// A clock that moves only when told to; for tests.
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

}  // namespace sluice
