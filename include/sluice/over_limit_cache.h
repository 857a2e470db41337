// Keys known to be over their limit, until when: a gateway that has just been told "no, retry in
// 30 s" for a key answers that key's next requests itself, without asking the store, as
// envoyproxy/ratelimit's local cache does. A hot key that is over its limit then costs the
// store nothing until its retry time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "sluice/clock.h"
#include "sluice/mutex.h"

namespace sluice {

// Thread-safe and bounded: past `max_keys` live entries, new ones are not remembered (the store
// is asked instead), so the cache cannot grow without bound under a flood of distinct keys.
class OverLimitCache {
 public:
  OverLimitCache(std::shared_ptr<const Clock> clock, size_t max_keys);

  // Remembers that `key` stays over its limit for `retry_ms` more milliseconds.
  void Remember(const std::string& key, int64_t retry_ms) SLUICE_EXCLUDES(mutex_);

  // How many more milliseconds `key` is known to stay over its limit; 0 when it is not.
  int64_t RetryMs(const std::string& key) const SLUICE_EXCLUDES(mutex_);

  size_t size() const SLUICE_EXCLUDES(mutex_);

 private:
  // Drops the entries whose time has passed.
  void DropExpired(int64_t now) const SLUICE_REQUIRES(mutex_);

  const std::shared_ptr<const Clock> clock_;
  const size_t max_keys_;
  mutable Mutex mutex_;
  mutable std::unordered_map<std::string, int64_t> until_
      SLUICE_GUARDED_BY(mutex_);  // key -> clock ms
};

}  // namespace sluice
