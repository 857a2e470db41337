// How one script call of a RedisStore goes out, beyond its operations: what a cluster client
// needs. Internal to the stores on Redis; the cluster store is its one user.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "sluice/clock.h"
#include "sluice/redis_store.h"

namespace sluice {

struct RedisCall {
  // Send ASKING first: the node is importing the slot, and an ASK redirection sent us here.
  bool asking = false;
  // Charge the ops only if every enforced one allows (Store::ApplyAllOrNothing).
  bool all_or_nothing = false;
  // Fail with kDeadlineExceeded at this time if it is sooner than the store's own timeout.
  // A reading of the store's clock (RedisOptions::clock).
  std::optional<Clock::TimePoint> deadline;
  // The cluster slot of every key, on a cluster node. Calls of several slots share one script
  // call, which declares only the first one's keys (a node refuses declared keys of several
  // slots); a call whose undeclared keys the node does not hold is sent again alone.
  std::optional<uint16_t> slot;
};

// Applies `ops` on `store` as RedisStore::Apply does, shaped by `call`; calls of several slots
// that arrive together share one script call.
void ApplyCall(RedisStore& store, std::vector<BucketOp> ops, const RedisCall& call,
               StoreCallback done);

}  // namespace sluice
