#include "method_client.h"

#include <stdexcept>

namespace sluice::baselines {

MethodClient::MethodClient(Method method, const Servers& servers, const Options& redis,
                           const MemcachedOptions& memcached)
    : method_(method) {
  const auto missing = [&](const char* server) {
    return std::runtime_error(std::string(MethodName(method)) + " needs " + server);
  };
  switch (ServerOf(method)) {
    case Server::kRedis:
      if (servers.redis_port == 0) throw missing("a redis-server");
      redis_ = std::make_unique<Client>(servers.host, servers.redis_port, redis);
      break;
    case Server::kPostgres:
      if (servers.postgres_conninfo.empty()) throw missing("a PostgreSQL server");
      postgres_ = std::make_unique<PostgresClient>(servers.postgres_conninfo,
                                                   method == Method::kPostgresSync);
      break;
    case Server::kMemcached:
      if (servers.memcached_port == 0) throw missing("a memcached");
      memcached_ =
          std::make_unique<MemcachedClient>(servers.host, servers.memcached_port, memcached);
      break;
  }
}

Outcome MethodClient::Check(const std::string& key, const Limit& limit, int64_t cost) {
  if (redis_) return redis_->Check(method_, key, limit, cost);
  if (postgres_) return postgres_->Check(key, limit, cost);
  if (method_ == Method::kMemcachedIncr) return memcached_->FixedWindow(key, limit, cost);
  return memcached_->TokenBucket(key, limit, cost);
}

}  // namespace sluice::baselines
