// A real Redis Cluster for tests: its nodes are redis-server processes that the test owns
// (started by `scripts/redis-cluster run-node`, so they die with the test), joined by
// `scripts/redis-cluster create`.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "process.h"
#include "redis_server.h"
#include "sluice/cluster_store.h"
#include "tls_certificates.h"

namespace sluice::testing {

class RedisCluster {
 public:
  // Starts primaries x (1 + replicas) nodes and joins them; fails the test if it cannot. With
  // `tls`, every node also serves TLS on a port of its own and the cluster bus speaks TLS
  // (tls-cluster yes); the plaintext ports stay for the tests to poke the nodes.
  RedisCluster(int primaries, int replicas, const TlsCertificates* tls = nullptr);
  ~RedisCluster();
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;

  const std::vector<uint16_t>& ports() const { return ports_; }

  // Options for a ClusterStore seeded with every node (their TLS ports, trusting the test CA,
  // with TLS).
  ClusterOptions Options() const;

  // The node on `port` announces `announced` as its port from now on (cluster-announce-port),
  // as a node behind a NAT or a proxy does: every node's slot map, and so every client, names
  // it there, while the cluster bus still goes to the node itself. Returns once every running
  // node names it so. The methods below go on naming the node by its own port.
  void Announce(uint16_t port, uint16_t announced);

  // The port of the primary that serves `slot` now, asking a running node; 0 when none does.
  uint16_t PrimaryOf(uint16_t slot) const;
  // The ports of the primaries now.
  std::vector<uint16_t> Primaries() const;
  // The cluster node ID of the node on `port`.
  std::string NodeId(uint16_t port) const;

  // Kills the node on `port` at once (SIGKILL), or starts it again with its old identity.
  void Kill(uint16_t port);
  void Start(uint16_t port);
  bool Running(uint16_t port) const { return nodes_.count(port) != 0; }

  std::unique_ptr<RedisClient> Client(uint16_t port) const {
    return std::make_unique<RedisClient>(port);
  }

 private:
  uint16_t AnyRunning() const;
  // A port a slot map names, as the node's own port.
  uint16_t OwnPort(uint16_t named) const;

  const TlsCertificates* tls_;
  std::string dir_;
  std::vector<uint16_t> ports_;
  std::map<uint16_t, uint16_t> tls_ports_;  // plaintext port -> TLS port
  std::map<uint16_t, std::unique_ptr<Process>> nodes_;
  std::map<uint16_t, uint16_t> own_ports_;  // announced port -> the node's own
};

}  // namespace sluice::testing
