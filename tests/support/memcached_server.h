// A real memcached for tests: started on a free loopback port (as `nobody` when the tests run as
// root, since memcached refuses root), stopped on destruction.
#pragma once

#include <cstdint>
#include <memory>

#include "process.h"

namespace sluice::testing {

class MemcachedServer {
 public:
  // Starts memcached with one worker thread and TCP only; waits until it takes connections.
  MemcachedServer();

  uint16_t port() const { return port_; }

 private:
  uint16_t port_;
  std::unique_ptr<Process> process_;
};

}  // namespace sluice::testing
