// Time, injected: code that needs the time takes a Clock, so that tests can control it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

namespace sluice {

// A monotonic source of time. Implementations must be safe to call from many threads.
class Clock {
 public:
  using Duration = std::chrono::nanoseconds;
  // A reading of some Clock: only differences between readings of one clock mean anything.
  using TimePoint = std::chrono::time_point<Clock, Duration>;

  virtual ~Clock() = default;

  // The time since some fixed origin.
  virtual TimePoint Now() const = 0;

  // Now(), in whole milliseconds.
  int64_t NowMs() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Now().time_since_epoch()).count();
  }

  // How long a timer waiting for `remaining` of this clock's time sleeps in real time before it
  // reads the clock again. A clock that moves with real time waits all of it; one that a test
  // moves wakes often, so that a timer fires soon after the test moved the clock past it.
  virtual Duration RealWait(Duration remaining) const { return remaining; }
};

// The process's monotonic clock: never steps backwards, unaffected by NTP adjustments.
class SteadyClock final : public Clock {
 public:
  TimePoint Now() const override;
};

// One SteadyClock for the whole process: the clock of everything not given another.
const std::shared_ptr<const Clock>& ProcessSteadyClock();

// `clock`, or ProcessSteadyClock() when it is null: what takes an optional clock keeps this.
std::shared_ptr<const Clock> ClockOrSteady(std::shared_ptr<const Clock> clock);

}  // namespace sluice
