#include "gather.h"

#include <utility>

namespace sluice::local {

void Gather::Set(size_t index, const BucketReply& reply) {
  std::unique_lock lock(mutex_);
  replies_[index] = reply;
  Settle(lock);
}

void Gather::Fail(const Status& status) {
  std::unique_lock lock(mutex_);
  if (error_.ok()) error_ = status;
  Settle(lock);
}

void Gather::Release() {
  std::unique_lock lock(mutex_);
  Settle(lock);
}

void Gather::Settle(std::unique_lock<std::mutex>& lock) {
  if (--outstanding_ > 0 && error_.ok()) return;
  if (!done_) return;  // answered already, on a failure
  StoreCallback done = std::move(done_);
  done_ = nullptr;
  Result<std::vector<BucketReply>> result =
      error_.ok() ? Result<std::vector<BucketReply>>(std::move(replies_))
                  : Result<std::vector<BucketReply>>(error_);
  lock.unlock();
  done(std::move(result));
}

}  // namespace sluice::local
