#include "method_client.h"

#include <algorithm>
#include <future>
#include <stdexcept>
#include <utility>
#include <vector>

namespace sluice::baselines {
namespace {

// One durable check of `cost` against the quota at `key` (a fixed window of `limit.capacity` per
// `limit.period_ms`), waiting for its commit.
Outcome TakeQuota(QuotaStore& store, const std::string& key, const Limit& limit, int64_t cost) {
  QuotaOp op;
  op.bucket = "baseline";
  op.value = key;
  op.limit = limit.capacity;
  op.cost = cost;
  op.window.duration_ms = limit.period_ms;
  std::promise<Result<std::vector<QuotaReply>>> answered;
  std::future<Result<std::vector<QuotaReply>>> answer = answered.get_future();
  store.Take({std::move(op)}, [&answered](Result<std::vector<QuotaReply>> replies) {
    answered.set_value(std::move(replies));
  });
  const Result<std::vector<QuotaReply>> replies = answer.get();
  if (!replies.ok()) throw std::runtime_error("quota store: " + replies.status().ToString());
  const QuotaReply& quota = replies->front();
  Outcome out;
  out.reply.allowed = quota.charged;
  out.reply.remaining = std::max<int64_t>(0, limit.capacity - quota.used);
  out.reply.reset_ms = quota.window_end_ms - quota.now_ms;
  out.reply.retry_ms = quota.charged ? 0 : out.reply.reset_ms;
  out.round_trips = 1;  // shared with the checks of its statement
  return out;
}

}  // namespace

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
      if (method == Method::kPostgresQuotaStore) {
        if (!servers.quota_store) throw missing("a quota store");
        quota_store_ = servers.quota_store;
        break;
      }
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
  if (quota_store_) return TakeQuota(*quota_store_, key, limit, cost);
  if (method_ == Method::kMemcachedIncr) return memcached_->FixedWindow(key, limit, cost);
  return memcached_->TokenBucket(key, limit, cost);
}

}  // namespace sluice::baselines
