// One Apply's replies, gathered from where each comes: local decisions, the shared store and
// other checks' leases.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "sluice/status.h"
#include "sluice/store.h"

namespace sluice::local {

// Answers once, when the last reply has come or on the first failure. Thread-safe.
class Gather {
 public:
  Gather(size_t count, StoreCallback done)
      : replies_(count), outstanding_(count + 1), done_(std::move(done)) {}

  void Set(size_t index, const BucketReply& reply);
  void Fail(const Status& status);
  // The builder's own hold: no answer before every op has been handed out.
  void Release();

 private:
  void Settle(std::unique_lock<std::mutex>& lock);

  std::mutex mutex_;
  std::vector<BucketReply> replies_;
  size_t outstanding_;
  Status error_;
  StoreCallback done_;
};

}  // namespace sluice::local
