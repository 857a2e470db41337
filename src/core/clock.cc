#include "sluice/clock.h"

namespace sluice {

Clock::TimePoint SteadyClock::Now() const {
  return TimePoint(
      std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now().time_since_epoch()));
}

const std::shared_ptr<const Clock>& ProcessSteadyClock() {
  static const auto* const clock =
      new std::shared_ptr<const Clock>(std::make_shared<SteadyClock>());
  return *clock;
}

std::shared_ptr<const Clock> ClockOrSteady(std::shared_ptr<const Clock> clock) {
  if (clock) return clock;
  return ProcessSteadyClock();
}

}  // namespace sluice
