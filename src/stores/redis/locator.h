// Where a Redis connection goes each time it connects: a fixed address, or the master that Redis
// Sentinel names (src/stores/sentinel).
#pragma once

#include <functional>
#include <memory>
#include <utility>

#include "sluice/status.h"
#include "transport.h"

namespace sluice::redis {

// Asked once per connection attempt, on the connection's io_context.
class Locator {
 public:
  using Done = std::function<void(Result<NodeAddress>)>;

  virtual ~Locator() = default;

  // Finds the server to connect to now; `done` runs on the io_context, maybe inline.
  virtual void Locate(Done done) = 0;

  // Whether a connected server must confirm with ROLE that it is a master: a sentinel's answer
  // can be out of date during a failover.
  virtual bool ConfirmsMaster() const { return false; }

  // Calls `moved` on the io_context with the address when there is news that the server may
  // have moved (a sentinel's +switch-master, or its answer once subscribed): a hint to connect
  // again sooner; Locate stays the source of truth.
  virtual void Watch(const std::function<void(const NodeAddress&)>& /*moved*/) {}

  // Ends what it runs in the background; Locate is not called again.
  virtual void Stop() {}
};

// The same address every time.
class FixedLocator final : public Locator {
 public:
  explicit FixedLocator(NodeAddress address) : address_(std::move(address)) {}
  void Locate(Done done) override { done(address_); }

 private:
  NodeAddress address_;
};

}  // namespace sluice::redis
