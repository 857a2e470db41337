// Opens the store a configuration names, for the commands that check requests.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "config/config.h"
#include "http/event_loops.h"
#include "sluice/store.h"

namespace sluice::cli {

struct OpenedStore {
  std::shared_ptr<Store> store;
  std::function<bool()> ready;  // whether the store can be reached now
};

// A memory store, or a Redis or Redis Cluster store on a thread of its own, given up to its
// connect timeout to become ready; an unreachable Redis is logged, and checks follow the failure
// policy until it answers.
OpenedStore OpenStore(const config::StoreConfig& config);

// The store for each of `loops` (running): one memory store that all of them share, or a Redis
// (or cluster) store on each loop, so that a check never leaves its loop's thread. Waits for Redis
// as OpenStore does; `ready` is true while every connection is.
struct OpenedStores {
  std::vector<std::shared_ptr<Store>> stores;
  std::function<bool()> ready;
};
OpenedStores OpenStores(const config::StoreConfig& config, http::EventLoops& loops);

}  // namespace sluice::cli
