// Logging a message that may come with every request, such as a store's error, without a line
// per request: once per distinct message per interval.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "sluice/clock.h"

#include "sluice/mutex.h"
#include "sluice/thread_annotations.h"

namespace sluice::http {

// Thread-safe. A message logged within the interval of its last line is only counted; the next
// line says how many times it came meanwhile. At most kMaxMessages distinct messages are
// remembered (past that the oldest are forgotten), so a flood of distinct errors cannot grow
// it.
class ThrottledLog {
 public:
  static constexpr size_t kMaxMessages = 256;

  // `clock` (the process's steady clock when null) times the intervals.
  explicit ThrottledLog(std::chrono::milliseconds interval = std::chrono::seconds(1),
                        std::shared_ptr<const Clock> clock = nullptr)
      : interval_(interval), clock_(ClockOrSteady(std::move(clock))) {}

  // Logs `message` as a warning, prefixed by `what` ("store error"), unless it was logged less
  // than an interval ago. Returns whether it was logged.
  bool Warn(const std::string& what, const std::string& message) SLUICE_EXCLUDES(mutex_);

 private:
  struct Seen {
    Clock::TimePoint logged;
    uint64_t repeats = 0;  // since it was logged
  };

  const std::chrono::milliseconds interval_;
  const std::shared_ptr<const Clock> clock_;
  Mutex mutex_;
  std::map<std::string, Seen> seen_ SLUICE_GUARDED_BY(mutex_);
};

}  // namespace sluice::http
