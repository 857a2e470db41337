// A Redis Sentinel setup for tests: a master, its replicas and the sentinels that watch them,
// redis-server processes of the test's own on loopback ports.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fault_proxy.h"
#include "process.h"
#include "redis_server.h"
#include "sluice/redis_options.h"
#include "tls_certificates.h"

namespace sluice::testing {

class RedisSentinels {
 public:
  static constexpr const char* kMaster = "mymaster";

  // How everyone (the sentinels, the replicas, and so the stores the sentinels send there)
  // reaches the first master.
  enum class MasterReach {
    kDirect,
    // Through a FaultProxy: the master is known by the proxy's port, so that the faults it
    // injects reach every connection to the master. The sentinels then take a minute without an
    // answer to call the master down: the faults are not meant to fail it over.
    kThroughProxy,
  };

  // Starts the master and `replicas` replicas, then `sentinels` sentinels (quorum: a majority),
  // and waits until every sentinel knows the replicas and the other sentinels. With `tls`,
  // every server and sentinel serves TLS on a port of its own beside its plaintext one (which
  // the tests poke), and replication and the sentinels' links to the servers use TLS: what the
  // sentinels name are the TLS ports.
  explicit RedisSentinels(int replicas = 1, int sentinels = 3, const TlsCertificates* tls = nullptr,
                          MasterReach reach = MasterReach::kDirect);
  ~RedisSentinels();
  RedisSentinels(const RedisSentinels&) = delete;
  RedisSentinels& operator=(const RedisSentinels&) = delete;

  // Options for a sentinel store on this setup (TLS trusting the test CA when it speaks TLS).
  RedisOptions Options() const;

  // The plaintext port of the server the sentinels name as master now; while none of them
  // runs, of the one they named last (no failover can happen then).
  uint16_t MasterPort() const;
  // The plaintext ports of every data server (master and replicas).
  std::vector<uint16_t> ServerPorts() const;
  std::unique_ptr<RedisClient> Client(uint16_t port) const {
    return std::make_unique<RedisClient>(port);
  }

  // Asks a sentinel for a failover and waits until the sentinels name the new master and it
  // answers as one; returns its plaintext port.
  uint16_t Failover();

  // The proxy in front of the first master (kThroughProxy), else null.
  FaultProxy* master_proxy() const { return master_proxy_.get(); }

  void KillSentinel(size_t i);
  void StartSentinel(size_t i);
  size_t sentinels() const { return sentinel_ports_.size(); }

 private:
  struct Server {
    std::unique_ptr<RedisServer> process;
    uint16_t tls_port = 0;    // 0 without TLS
    uint16_t proxy_port = 0;  // 0 when reached directly
    // The port it is known by: its proxy's, else its TLS port, else its plaintext one.
    uint16_t Announced() const {
      if (proxy_port != 0) return proxy_port;
      return tls_port != 0 ? tls_port : process->port();
    }
  };

  // The port the sentinels name for a server: its TLS port with TLS, else its plaintext one.
  uint16_t PlainPortOf(uint16_t announced) const;
  uint16_t NamedMasterPort() const;
  void WaitUntilSettled() const;
  // The configuration of sentinel `i` of `sentinels`, which it rewrites as it learns.
  void WriteSentinelConf(size_t i, int sentinels) const;

  const TlsCertificates* tls_;
  std::string dir_;
  std::vector<Server> servers_;
  std::vector<uint16_t> sentinel_ports_;      // plaintext
  std::vector<uint16_t> sentinel_tls_ports_;  // with TLS
  std::vector<std::unique_ptr<Process>> sentinel_processes_;
  int replicas_;
  std::unique_ptr<FaultProxy> master_proxy_;
  mutable uint16_t last_named_master_ = 0;  // announced port
};

}  // namespace sluice::testing
