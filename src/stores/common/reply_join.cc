#include "reply_join.h"

#include <cassert>
#include <utility>

namespace sluice::stores {

ReplyJoin::ReplyJoin(size_t positions, size_t parts, OnError on_error, StoreCallback done)
    : replies_(positions), outstanding_(parts), on_error_(on_error), done_(std::move(done)) {
  assert(parts > 0);
  assert(done_);
}

void ReplyJoin::Answer(const std::vector<size_t>& positions,
                       const Result<std::vector<BucketReply>>& result) {
  if (!result.ok()) return Fail(result.status());
  assert(result->size() == positions.size());
  mutex_.Lock();
  if (!answered_) {
    for (size_t k = 0; k < positions.size() && k < result->size(); ++k) {
      assert(positions[k] < replies_.size());
      replies_[positions[k]] = (*result)[k];
    }
  }
  PartDone();
}

void ReplyJoin::Set(size_t position, const BucketReply& reply) {
  mutex_.Lock();
  if (!answered_) {
    assert(position < replies_.size());
    replies_[position] = reply;
  }
  PartDone();
}

void ReplyJoin::Fail(const Status& status) {
  assert(!status.ok());
  mutex_.Lock();
  if (error_.ok()) error_ = status;
  PartDone();
}

void ReplyJoin::Release() {
  mutex_.Lock();
  PartDone();
}

bool ReplyJoin::Answered() const {
  MutexLock lock(&mutex_);
  return answered_;
}

void ReplyJoin::PartDone() {
  mutex_.AssertHeld();
  assert(outstanding_ > 0);  // no more answers than parts
  --outstanding_;
  const bool complete = outstanding_ == 0 || (!error_.ok() && on_error_ == OnError::kAnswerAtOnce);
  if (answered_ || !complete) return mutex_.Unlock();
  answered_ = true;
  StoreCallback done = std::move(done_);
  Result<std::vector<BucketReply>> result =
      error_.ok() ? Result<std::vector<BucketReply>>(std::move(replies_))
                  : Result<std::vector<BucketReply>>(error_);
  mutex_.Unlock();
  done(std::move(result));
}

}  // namespace sluice::stores
