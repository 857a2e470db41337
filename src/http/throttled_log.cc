#include "http/throttled_log.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>

namespace sluice::http {

bool ThrottledLog::Warn(const std::string& what, const std::string& message) {
  const Clock::TimePoint now = clock_->Now();
  uint64_t repeats = 0;
  {
    MutexLock lock(&mutex_);
    auto it = seen_.find(message);
    if (it != seen_.end() && now - it->second.logged < interval_) {
      ++it->second.repeats;
      return false;
    }
    if (it == seen_.end()) {
      if (seen_.size() >= kMaxMessages) {
        seen_.erase(std::min_element(seen_.begin(), seen_.end(), [](const auto& a, const auto& b) {
          return a.second.logged < b.second.logged;
        }));
      }
      it = seen_.emplace(message, Seen{}).first;
    }
    assert(seen_.size() <= kMaxMessages);
    repeats = std::exchange(it->second.repeats, 0);
    it->second.logged = now;
  }
  if (repeats > 0) {
    spdlog::warn("{}: {} ({} more times since it was last logged)", what, message, repeats);
  } else {
    spdlog::warn("{}: {}", what, message);
  }
  return true;
}

}  // namespace sluice::http
