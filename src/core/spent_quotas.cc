#include "core/spent_quotas.h"

#include <algorithm>

namespace sluice {

SpentQuotas::SpentQuotas(std::shared_ptr<const Clock> clock, size_t max_keys)
    : clock_(std::move(clock)), max_keys_(max_keys) {}

std::string SpentQuotas::Key(std::string_view bucket, std::string_view value) {
  // A bucket is a name without ':', so the first ':' ends it.
  std::string key;
  key.reserve(bucket.size() + 1 + value.size());
  key.append(bucket).append(1, ':').append(value);
  return key;
}

void SpentQuotas::Remember(const QuotaOp& op, const QuotaReply& reply, int64_t asked_ms,
                           uint64_t changes) {
  if (reply.allowed || reply.window_end_ms <= reply.now_ms) return;
  const int64_t until = asked_ms + (reply.window_end_ms - reply.now_ms);
  const int64_t now = clock_->NowMs();
  if (until <= now) return;
  std::string key = Key(op.bucket, op.value);
  MutexLock lock(&mutex_);
  if (changes != changes_) return;
  if (entries_.size() >= max_keys_ && !entries_.contains(key)) {
    DropEnded(now);
    if (entries_.size() >= max_keys_) return;
  }
  auto [it, added] = entries_.try_emplace(std::move(key));
  if (!added) ends_.erase({it->second.until_ms, &it->first});
  it->second = Entry{op.window, reply, asked_ms, until};
  ends_.emplace(until, &it->first);
}

std::optional<QuotaReply> SpentQuotas::Rejection(const QuotaOp& op) const {
  if (!op.enforced || op.cost <= 0) return std::nullopt;
  const int64_t now = clock_->NowMs();
  MutexLock lock(&mutex_);
  auto it = entries_.find(Key(op.bucket, op.value));
  if (it == entries_.end()) return std::nullopt;
  const Entry& entry = it->second;
  if (entry.until_ms <= now) {
    Erase(it);
    return std::nullopt;
  }
  // Another window (the rule was reconfigured), or a limit raised since: the store decides.
  if (entry.window != op.window || entry.reply.used + op.cost <= op.limit) return std::nullopt;
  QuotaReply reply = entry.reply;
  reply.allowed = false;
  reply.charged = false;
  // The store's clock moved on as this one did; never past the window's end.
  reply.now_ms = std::min(reply.window_end_ms - 1, reply.now_ms + (now - entry.asked_ms));
  return reply;
}

void SpentQuotas::Forget(std::string_view bucket, std::string_view value) {
  MutexLock lock(&mutex_);
  ++changes_;
  if (auto it = entries_.find(Key(bucket, value)); it != entries_.end()) Erase(it);
}

void SpentQuotas::Clear() {
  MutexLock lock(&mutex_);
  ++changes_;
  ends_.clear();
  entries_.clear();
}

uint64_t SpentQuotas::Changes() const {
  MutexLock lock(&mutex_);
  return changes_;
}

size_t SpentQuotas::size() const {
  MutexLock lock(&mutex_);
  return entries_.size();
}

void SpentQuotas::DropEnded(int64_t now) const {
  while (!ends_.empty() && ends_.begin()->first <= now) {
    Erase(entries_.find(*ends_.begin()->second));
  }
}

void SpentQuotas::Erase(Entries::iterator it) const {
  ends_.erase({it->second.until_ms, &it->first});
  entries_.erase(it);
}

}  // namespace sluice
