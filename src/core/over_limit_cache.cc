#include "sluice/over_limit_cache.h"

#include <iterator>

namespace sluice {

OverLimitCache::OverLimitCache(std::shared_ptr<const Clock> clock, size_t max_keys)
    : clock_(std::move(clock)), max_keys_(max_keys) {}

void OverLimitCache::Remember(const std::string& key, int64_t retry_ms) {
  if (retry_ms <= 0) return;
  const int64_t now = clock_->NowMs();
  MutexLock lock(&mutex_);
  if (until_.size() >= max_keys_ && !until_.contains(key)) {
    DropExpired(now);
    if (until_.size() >= max_keys_) return;
  }
  until_[key] = now + retry_ms;
}

int64_t OverLimitCache::RetryMs(const std::string& key) const {
  const int64_t now = clock_->NowMs();
  MutexLock lock(&mutex_);
  auto it = until_.find(key);
  if (it == until_.end()) return 0;
  if (it->second <= now) {
    until_.erase(it);
    return 0;
  }
  return it->second - now;
}

size_t OverLimitCache::size() const {
  MutexLock lock(&mutex_);
  return until_.size();
}

void OverLimitCache::DropExpired(int64_t now) const {
  for (auto it = until_.begin(); it != until_.end();) {
    it = it->second <= now ? until_.erase(it) : std::next(it);
  }
}

}  // namespace sluice
