// Time, injected: code that needs the time takes a Clock, so that tests can control it.
#pragma once

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

}  // namespace sluice
