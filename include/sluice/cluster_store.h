// Buckets in a Redis Cluster: every bucket in one hash slot, slots spread over primaries.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sluice/redis_store.h"
#include "sluice/store.h"

namespace sluice {

struct ClusterOptions {
  // Where to read the slot map first: any one node that answers is enough.
  std::vector<HostPort> seeds;
  std::string username;       // an ACL user; empty for the default user
  std::string password;       // empty for no AUTH
  std::string password_file;  // set: the password is this file's content (RedisCredentials)
  // Set: every node is reached over TLS (nodes with tls-cluster yes). A seed is verified as
  // server_name when set, else as its host; a node from the slot map as its announced hostname
  // when it has one, else server_name, else its address.
  std::optional<TlsOptions> tls;
  ScriptMode mode = ScriptMode::kEvalsha;
  BucketLayout layout = BucketLayout::kHash;
  std::chrono::milliseconds connect_timeout{1000};
  // A whole check, redirections and retries included; past it, kDeadlineExceeded (or the last
  // error seen) and the failure policy.
  std::chrono::milliseconds timeout{50};
  size_t max_in_flight = 16384;  // per primary, as for one server
  // The slot map is read again this often, and at once (but never more often than
  // refresh_min_gap, doubling while reads fail) when a call is redirected or a node fails.
  std::chrono::milliseconds refresh_interval{10'000};
  std::chrono::milliseconds refresh_min_gap{100};
  int max_redirects = 5;  // MOVED/ASK hops for one call before it fails
  // What the timeouts, retries and refreshes are measured on; null: the process's steady clock.
  std::shared_ptr<const Clock> clock;

  bool operator==(const ClusterOptions&) const = default;
};

struct ClusterStoreStats {
  uint64_t refreshes = 0;  // slot maps read
  uint64_t moved = 0;      // MOVED redirections followed
  uint64_t asked = 0;      // ASK redirections followed
  uint64_t retries = 0;    // calls tried again after a transient error
  size_t primaries = 0;    // primaries in the slot map now
};

// A Store on a Redis Cluster. A check's operations are split by slot, one script call per slot,
// sent to every owning primary at once over its auto-pipelined connection (a RedisStore on the
// same io_context), and answered together when the slowest has answered. MOVED updates the slot
// map and retries at once; ASK sends ASKING and retries once at the named node; TRYAGAIN,
// CLUSTERDOWN, LOADING, READONLY and a node that cannot be reached ask for a new slot map and
// retry with backoff within the check's timeout. A call that a lost connection cut off is not
// retried: the node may have applied it. Each primary loads the script or function when connected,
// so a new primary after a failover gets it too, and NOSCRIPT is handled per node. The slot map
// is read over connections of its own (CLUSTER SHARDS, or CLUSTER SLOTS on older servers),
// with TLS when the nodes speak it.
class ClusterStore final : public Store {
 public:
  // Runs on a thread of its own; reads the credentials `options` names (when they cannot be
  // read, no node is ever reached and checks fail with kUnavailable and the reason).
  explicit ClusterStore(ClusterOptions options);
  // Runs on `io`, run by one thread (an event loop of the caller's), as RedisStore can.
  ClusterStore(ClusterOptions options, boost::asio::io_context& io);
  // With credentials read (and reloaded) by the caller, on `io` when given, else on a thread of
  // its own.
  ClusterStore(ClusterOptions options, std::shared_ptr<RedisCredentials> credentials,
               boost::asio::io_context* io);
  // Pending checks fail; the own thread, if any, is joined as RedisStore's is (from that thread
  // itself, later, at the latest at exit).
  ~ClusterStore() override;

  ClusterStore(const ClusterStore&) = delete;
  ClusterStore& operator=(const ClusterStore&) = delete;

  // One check. Operations whose keys share a slot go in one call; those in other slots in
  // calls of their own. If any call fails for good, the check fails with its error.
  void Apply(std::vector<BucketOp> ops, StoreCallback done) override;
  // One script call on the slot's primary, when every key is in one slot (the rules' keys share
  // a hash tag); otherwise kFailedPrecondition, nothing charged.
  void ApplyAllOrNothing(std::vector<BucketOp> ops, StoreCallback done) override;

  // True when a slot map is known and a primary in it is connected. A shard down or failing
  // over does not make the store unready: its checks follow the failure policy, the others go on.
  bool Ready() const;
  bool WaitReady(std::chrono::milliseconds timeout) const;

  ClusterStoreStats Stats() const;

  // One entry per primary of the slot map in force (by its address, "host:port"), and per node
  // still kept while it is up: whether connected, and its round trips.
  std::vector<StoreNodeStatus> Nodes() const override;

  class Impl;  // shared with its handlers

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace sluice
