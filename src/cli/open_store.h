// Opens the store a configuration names, for the commands that check requests.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "config/config.h"
#include "http/event_loops.h"
#include "sluice/postgres_quota_store.h"
#include "sluice/redis_credentials.h"
#include "sluice/status.h"
#include "sluice/store.h"

namespace sluice::cli {

struct OpenedStore {
  std::shared_ptr<Store> store;
  std::function<bool()> ready;  // whether the store can be reached now
};

// A memory store, or a Redis, sentinel or Redis Cluster store on a thread of its own, given up
// to its connect timeout to become ready; an unreachable Redis is logged, and checks follow the
// failure policy until it answers. Fails when the credentials it names cannot be read.
Result<OpenedStore> OpenStore(const config::StoreConfig& config);

// The store for each of `loops` (running): one memory store that all of them share, or a Redis
// (or sentinel, or cluster) store on each loop, so that a check never leaves its loop's thread.
// Waits for Redis as OpenStore does; `ready` is true while every connection is. The stores
// share `credentials` (null for the memory store): reloading it rotates them all.
struct OpenedStores {
  std::vector<std::shared_ptr<Store>> stores;
  std::function<bool()> ready;
  std::shared_ptr<RedisCredentials> credentials;
};
Result<OpenedStores> OpenStores(const config::StoreConfig& config, http::EventLoops& loops);

// Reads the credentials `config` names (null for the memory store), as OpenStores will.
Result<std::shared_ptr<RedisCredentials>> LoadCredentials(const config::StoreConfig& config);

// The quota store `config` names, given up to its connect timeout to become ready. A table of the
// wrong shape, a password file that cannot be read or a password the server refuses fail here,
// with the reason: a clear error at start rather than every durable check failing. A server that
// cannot be reached is logged, and durable rules follow quota_store.failure until it answers.
Result<std::shared_ptr<PostgresQuotaStore>> OpenQuotaStore(const config::QuotaStoreConfig& config);

}  // namespace sluice::cli
