// A TCP proxy for tests that injects faults between a client (a store) and a server
// (redis-server): it listens on a loopback port of its own, forwards each connection it takes to
// the server, and breaks the bytes' way as the test says, while the test runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>

namespace sluice::testing {

enum class Fault {
  kNone,     // bytes pass as they come
  kLatency,  // bytes each way are delivered `delay` after they arrived, in order
  kStall,    // bytes each way are held, in order, until the fault changes; then they go on
  kReset,    // every connection is reset (RST to both sides): those open, and each new one at once
  // The client's side of every connection gets a FIN and none of the server's bytes from then
  // on; what the client sends still reaches the server. New connections get the same at once.
  kHalfClose,
  kByteByByte,  // the server's bytes go to the client one at a time, `delay` apart
  // On every connection, the next bytes the server sends are cut in half: the first half goes
  // to the client, then both sides are closed.
  kCutReply,
  kRefuse,  // the port stops listening (connecting is refused); open connections are closed
};

// "latency", "stall", ...: for test names and messages.
std::string_view FaultName(Fault fault);

// Runs on a thread of its own; every method may be called from any other thread.
class FaultProxy {
 public:
  // Listens on a free loopback port and forwards what it takes to 127.0.0.1:`target_port`.
  explicit FaultProxy(uint16_t target_port);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  uint16_t port() const;

  // From now on, `fault` (`delay` is kLatency's and kByteByByte's); in force when this returns.
  // A fault that ends releases what it held, and kRefuse's end listens again on the same port.
  void Inject(Fault fault, std::chrono::milliseconds delay = std::chrono::milliseconds(0));
  void Heal() { Inject(Fault::kNone); }

  // Connections taken so far.
  uint64_t accepted() const;
  // Bytes the clients have sent so far (taken by the proxy, whether it passed them on or holds
  // them).
  uint64_t from_clients() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::testing
