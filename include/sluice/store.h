// Where buckets live. Every store answers the same asynchronous question: apply these bucket
// operations, atomically each, and say what each bucket answered.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sluice/latency_histogram.h"
#include "sluice/rule.h"
#include "sluice/status.h"
#include "sluice/token_bucket.h"

namespace sluice {

// The most buckets a store that holds them itself (the memory store), or a process's local
// counts, hold unless told otherwise.
inline constexpr size_t kDefaultMaxBuckets = 1'000'000;

// One bucket operation: take `cost` tokens from the bucket under `key`, shaped by `limit`.
// A negative cost gives tokens back (a refund), never above capacity.
struct BucketOp {
  std::string key;
  Limit limit;
  int64_t cost = 1;
  ReplicaWait wait = {};  // the rule's; a store without replicas ignores it
  Algorithm algorithm = Algorithm::kTokenBucket;
  // For ApplyAllOrNothing: whether this bucket's rejection stops every charge (a shadow rule's
  // does not).
  bool enforced = true;
  // Take as many of `cost` whole tokens as the bucket holds rather than all or none, and say how
  // many in BucketReply::granted: for a gateway that leases tokens or reports what it already
  // admitted. Token bucket only, cost >= 0; not for ApplyAllOrNothing.
  bool up_to = false;
  // The rule's: a LocalCountingStore decides ops that are not kShared itself; other stores
  // ignore it.
  LocalCounting counting = {};
  // Take all of `cost` even when the bucket holds less (TakeTokensInDebt): the bucket may go
  // into debt, and the reply is allowed when it is not in debt afterwards. For counts that come
  // after the fact and for Envoy's rate limit service, which counts every hit. Token bucket
  // only, cost in [0, Limit::kMaxCapacity] (past the capacity too: the debt is bounded), not with
  // up_to; ApplyAllOrNothing takes it as a plain op.
  bool debt = false;
};

// Ok when every operation's limit is valid, its cost within [-capacity, capacity] (a debt op's
// within [0, Limit::kMaxCapacity]), and an up_to or debt op a token bucket's; stores refuse
// other operations with kInvalidArgument rather than compute with them.
Status ValidateBucketOps(const std::vector<BucketOp>& ops);

// One server a store talks to, for operators: whether it is connected, and how long its answers
// took.
struct StoreNodeStatus {
  // Where it is, as configured or as the cluster's slot map names it ("10.0.0.1:6379",
  // "unix:/run/redis.sock", "sentinel master mymaster"); never a credential.
  std::string node;
  bool connected = false;
  LatencyCounts round_trips;  // from a call's submission to its answer, answered calls only
};

// Called once with one reply per operation, in order, or with the error that stopped them.
// It must neither block nor throw: it runs on a store's own thread.
using StoreCallback = std::function<void(Result<std::vector<BucketReply>>)>;

// A store of token buckets. Implementations are safe to call from many threads.
class Store {
 public:
  virtual ~Store() = default;

  // Applies `ops`, each atomically and in one round trip to the store, and calls `done` exactly
  // once: inline, or later on a thread of the store's own. `done` must not block. The ops' keys
  // must be distinct.
  virtual void Apply(std::vector<BucketOp> ops, StoreCallback done) = 0;

  // Applies `ops` together, in one atomic step: when every enforced op allows, each is applied
  // as Apply would; when one rejects, none is charged, and each reply says whether its op would
  // have allowed, with the bucket's tokens untouched. A store that cannot decide them in one
  // step (keys on different cluster shards, ops of different algorithms on Redis) charges
  // nothing and calls `done` with kFailedPrecondition at once.
  virtual void ApplyAllOrNothing(std::vector<BucketOp> ops, StoreCallback done) = 0;

  // Whether the store decides ops whose rule counts locally (BucketOp::counting) as that says;
  // only a LocalCountingStore does. Others would count them as shared.
  virtual bool CountsLocally() const { return false; }

  // The servers behind the store, one entry each (a cluster's primaries); none for a store
  // without a server, such as the memory store.
  virtual std::vector<StoreNodeStatus> Nodes() const { return {}; }

  // For a store that holds its buckets itself within a bound (the memory store's max_buckets):
  // the buckets it has forgotten before they were full, to stay within it. Nothing for a store
  // without such a bound, whose server keeps what it holds.
  virtual std::optional<uint64_t> BucketsForgotten() const { return std::nullopt; }
};

}  // namespace sluice
