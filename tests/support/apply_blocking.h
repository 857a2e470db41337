// Runs one Store::Apply and waits for its answer, for tests.
#pragma once

#include <future>
#include <vector>

#include "sluice/store.h"

namespace sluice::testing {

inline Result<std::vector<BucketReply>> ApplyBlocking(Store& store, std::vector<BucketOp> ops) {
  std::promise<Result<std::vector<BucketReply>>> promise;
  store.Apply(std::move(ops), [&](auto r) { promise.set_value(std::move(r)); });
  return promise.get_future().get();
}

}  // namespace sluice::testing
