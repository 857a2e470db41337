// One client of any baseline method (baselines.h): a connection to the server the method needs,
// for the benchmark and the tests, which run every method the same way.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "baselines.h"
#include "memcached_baseline.h"
#include "postgres_baseline.h"
#include "sluice/quota_store.h"

namespace sluice::baselines {

// Where the servers are. A method's server must be given to make its client.
struct Servers {
  std::string host = "127.0.0.1";
  uint16_t redis_port = 0;
  std::string postgres_conninfo;  // libpq's, such as "host=127.0.0.1 port=5432 user=postgres"
  uint16_t memcached_port = 0;
  // Sluice's quota store on that PostgreSQL, for kPostgresQuotaStore: one for every client, so
  // that their checks go together into one statement and one commit, as a gateway's do.
  std::shared_ptr<QuotaStore> quota_store;
};

class MethodClient {
 public:
  // Connects to the server of `method` (throws std::runtime_error if it cannot, or if that server
  // was not given). `redis` and `memcached` are those clients' options.
  MethodClient(Method method, const Servers& servers, const Options& redis = {},
               const MemcachedOptions& memcached = {});

  // One check of `cost` against the bucket (or window) at `key`, as the method does it.
  Outcome Check(const std::string& key, const Limit& limit, int64_t cost = 1);

 private:
  Method method_;
  std::unique_ptr<Client> redis_;
  std::unique_ptr<PostgresClient> postgres_;
  std::unique_ptr<MemcachedClient> memcached_;
  std::shared_ptr<QuotaStore> quota_store_;
};

}  // namespace sluice::baselines
