#include "sluice/store.h"

namespace sluice {

Status ValidateBucketOps(const std::vector<BucketOp>& ops) {
  for (const BucketOp& op : ops) {
    if (Status s = op.limit.Validate(); !s.ok()) {
      return Status::InvalidArgument("bucket " + op.key + ": " + s.message());
    }
    if (op.debt) {
      if (op.algorithm != Algorithm::kTokenBucket || op.up_to || op.cost < 0 ||
          op.cost > Limit::kMaxCapacity) {
        return Status::InvalidArgument("bucket " + op.key +
                                       ": only a token bucket goes into debt, by a cost in [0, " +
                                       std::to_string(Limit::kMaxCapacity) + "]");
      }
      continue;
    }
    if (op.cost > op.limit.capacity || op.cost < -op.limit.capacity) {
      return Status::InvalidArgument("bucket " + op.key + ": cost " + std::to_string(op.cost) +
                                     " is beyond the capacity");
    }
    if (op.up_to && (op.algorithm != Algorithm::kTokenBucket || op.cost < 0)) {
      return Status::InvalidArgument("bucket " + op.key +
                                     ": only a token bucket takes up to a cost, and never less "
                                     "than nothing");
    }
  }
  return {};
}

}  // namespace sluice
