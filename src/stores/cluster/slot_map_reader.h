// Reading a Redis Cluster's slot map, in the background, over connections of its own.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/clock_timer.h"
#include "sluice/cluster_store.h"
#include "sluice/redis_credentials.h"
#include "topology.h"

namespace sluice::cluster {

// Reads the map (CLUSTER SHARDS, or CLUSTER SLOTS where the server does not know it) from the
// node that answered last, else the known primaries and the seeds in a random order, so that
// one dead node does not delay every read the same way; again every refresh interval and, when
// asked, at once, but never sooner than the least gap after the last read (doubling while
// reads fail). Runs on one io_context's thread; `on_map` runs there with each map read.
class SlotMapReader final : public std::enable_shared_from_this<SlotMapReader> {
 public:
  using OnSlotMap = std::function<void(std::vector<SlotRange>)>;

  SlotMapReader(boost::asio::io_context& io, const ClusterOptions& options,
                std::shared_ptr<RedisCredentials> credentials, OnSlotMap on_map);

  // Reads the first map at once.
  void Start();
  // Reads again soon: a call was redirected or a node failed.
  void Request();
  // The primaries of the map in force, asked before the seeds.
  void SetPrimaries(std::vector<HostPort> primaries) { primaries_ = std::move(primaries); }
  void Stop();

  // Rounds of reading, answered or not; readable from any thread.
  uint64_t reads() const { return reads_.load(std::memory_order_relaxed); }

 private:
  void Schedule();
  void Read();
  void Ask(std::vector<HostPort> candidates, size_t next);
  std::vector<HostPort> Candidates();

  boost::asio::io_context& io_;
  const ClusterOptions options_;
  const std::shared_ptr<RedisCredentials> credentials_;
  const OnSlotMap on_map_;
  ClockTimer timer_;
  std::vector<HostPort> primaries_;
  std::optional<HostPort> last_answered_;
  std::optional<Clock::TimePoint> last_read_;
  std::chrono::milliseconds gap_;
  bool wanted_ = true;
  bool reading_ = false;
  bool stopped_ = false;
  std::atomic<uint64_t> reads_{0};
  std::mt19937_64 rng_{std::random_device{}()};
};

}  // namespace sluice::cluster
