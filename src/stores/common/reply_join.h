// The one answer to a store call that was split into parts: each part answers for some of the
// call's positions, from whichever thread it runs on, and the caller hears once.
#pragma once

#include <cstddef>
#include <vector>

#include "sluice/mutex.h"
#include "sluice/status.h"
#include "sluice/store.h"

namespace sluice::stores {

// A fan-in of `parts` partial answers into one reply of `positions` BucketReplies, in the order
// of the ops the call was given: each part puts its replies at the positions its ops had. The
// callback runs exactly once, outside the join's lock, on the thread of the part that completes
// it: when every part has answered, or, on a part's failure, as the error policy says.
// Thread-safe; shared (std::shared_ptr) by the parts.
class ReplyJoin {
 public:
  enum class OnError {
    // The first failure answers at once; later parts are ignored. For callers whose parts
    // cannot make a failed call succeed (a check fails as a whole).
    kAnswerAtOnce,
    // The call answers when every part has answered, with the first failure. For callers that
    // must not answer while a part is still out (its ops may still be applied).
    kAfterEveryPart,
  };

  // `parts` is the number of Answer, Set, Fail and Release calls that complete the join.
  ReplyJoin(size_t positions, size_t parts, OnError on_error, StoreCallback done);

  ReplyJoin(const ReplyJoin&) = delete;
  ReplyJoin& operator=(const ReplyJoin&) = delete;

  // One part's answer: on success its replies, one for each of `positions` in that order, or
  // its failure.
  void Answer(const std::vector<size_t>& positions, const Result<std::vector<BucketReply>>& result)
      SLUICE_EXCLUDES(mutex_);
  // One part that answers for one position.
  void Set(size_t position, const BucketReply& reply) SLUICE_EXCLUDES(mutex_);
  // One part that failed.
  void Fail(const Status& status) SLUICE_EXCLUDES(mutex_);
  // One part with no replies: a builder's own hold, released once every part has been handed
  // out, so that parts answering meanwhile cannot complete the join early.
  void Release() SLUICE_EXCLUDES(mutex_);

  // Whether the callback has run (or is running): a part not yet sent need not go.
  bool Answered() const SLUICE_EXCLUDES(mutex_);

 private:
  // Counts one part done; answers when the join is complete. Unlocks `mutex_` in any case.
  void PartDone() SLUICE_RELEASE(mutex_);

  mutable Mutex mutex_;
  std::vector<BucketReply> replies_ SLUICE_GUARDED_BY(mutex_);
  size_t outstanding_ SLUICE_GUARDED_BY(mutex_);
  const OnError on_error_;
  Status error_ SLUICE_GUARDED_BY(mutex_);
  bool answered_ SLUICE_GUARDED_BY(mutex_) = false;
  StoreCallback done_ SLUICE_GUARDED_BY(mutex_);
};

}  // namespace sluice::stores
