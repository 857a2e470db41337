// A Redis Cluster's slot map, as its nodes describe it.
#pragma once

#include <hiredis/hiredis.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/status.h"

namespace sluice::cluster {

// A range of slots and the primary that serves them.
struct SlotRange {
  uint16_t first = 0;
  uint16_t last = 0;
  std::string host;
  uint16_t port = 0;
  std::string hostname;  // the primary's announced hostname, when it has one: the TLS name

  std::string Address() const { return host + ":" + std::to_string(port); }
  bool operator==(const SlotRange&) const = default;
};

// The primaries' slot ranges from a reply to CLUSTER SHARDS (Redis 7: per shard, "slots" as
// start/end pairs and "nodes" with role and health), keeping each shard's online master. A node
// whose address is unknown ("?" or empty: a node that never met another does not know its own)
// is at `asked_host`, the host the reply came from, as Redis's documentation says. `tls`: the
// nodes' "tls-port" is the one to use (else "port"), for a client that speaks TLS.
Result<std::vector<SlotRange>> ParseClusterShards(const redisReply& reply,
                                                  std::string_view asked_host, bool tls = false);

// The same from CLUSTER SLOTS (older servers): [start, end, [host, port, id, {hostname}],
// replicas...]; the port is the one for the asking connection (TLS or not).
Result<std::vector<SlotRange>> ParseClusterSlots(const redisReply& reply,
                                                 std::string_view asked_host);

// A redirection in an error reply: "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381".
// The host is empty in "MOVED 3999 :6381" (a server whose nodes' addresses are unknown): the
// node is on the host of the one that answered.
struct Redirect {
  enum class Kind { kMoved, kAsk } kind;
  uint16_t slot = 0;
  std::string host;
  uint16_t port = 0;
};
Result<Redirect> ParseRedirect(std::string_view error);

// Whether an error reply says the cluster is changing and the call should be tried again once
// the slot map is read anew: TRYAGAIN, CLUSTERDOWN, LOADING, READONLY, MASTERDOWN.
bool IsTransientClusterError(std::string_view error);

}  // namespace sluice::cluster
