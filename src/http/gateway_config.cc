#include "http/gateway_config.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace sluice::http {

GatewayConfig::GatewayConfig(std::vector<std::shared_ptr<Store>> stores,
                             std::shared_ptr<QuotaStore> quota_store, Metrics& metrics,
                             TopRejected& top_rejected)
    : stores_(std::move(stores)),
      quota_store_(std::move(quota_store)),
      metrics_(metrics),
      top_rejected_(top_rejected) {
  assert(!stores_.empty() && "a limiter is made for each event loop's store");
}

Result<std::shared_ptr<const Snapshot>> GatewayConfig::Prepare(config::Config config) {
  std::vector<std::unique_ptr<Limiter>> limiters;
  LimiterOptions options = config::LimiterOptionsOf(config);  // one cache for all loops
  options.quota_store = quota_store_;
  // Rules that count locally share one set of local counts and leases per process, kept as
  // long as this configuration is; each loop's checks reach the store through its own
  // connection, syncs and returns through the first loop's.
  std::shared_ptr<LocalCountingStore> local_counts;
  if (std::any_of(config.rules.begin(), config.rules.end(),
                  [](const Rule& r) { return r.CountsLocally(); })) {
    local_counts =
        std::make_shared<LocalCountingStore>(stores_.front(), nullptr,
                                             /*background=*/true, config.store.max_buckets);
  }
  for (const std::shared_ptr<Store>& store : stores_) {
    Result<std::unique_ptr<Limiter>> limiter = Limiter::Create(
        config.rules, options,
        local_counts ? std::static_pointer_cast<Store>(local_counts->Through(store)) : store);
    if (!limiter.ok()) return limiter.status();
    limiters.push_back(std::move(limiter).value());
  }
  std::vector<RuleCounters*> counters;
  std::vector<RejectedValues*> rejected_values;
  for (const Rule& rule : limiters.front()->rules()) {
    counters.push_back(metrics_.ForRule(rule.name));
    rejected_values.push_back(top_rejected_.ForRule(rule.name));
  }
  std::string upstream_authority = config.upstream.address.ToString();
  const bool reports_costs = std::any_of(config.rules.begin(), config.rules.end(),
                                         [](const Rule& r) { return r.CostReported(); });
  return std::shared_ptr<const Snapshot>(std::make_shared<Snapshot>(
      Snapshot{std::move(config), std::move(limiters), std::move(counters), local_counts,
               reports_costs, std::move(upstream_authority), std::move(rejected_values)}));
}

Status GatewayConfig::Reconfigure(config::Config config) {
  Result<std::shared_ptr<const Snapshot>> snapshot = Prepare(std::move(config));
  if (!snapshot.ok()) return snapshot.status();
  Commit(std::move(snapshot).value());
  return {};
}

void GatewayConfig::Commit(std::shared_ptr<const Snapshot> snapshot) {
  top_rejected_.Resize(snapshot->config.debug_top.size);
  std::shared_ptr<const Snapshot> old;  // goes after the lock, with the last check using it
  MutexLock lock(&mutex_);
  old = std::exchange(current_, std::move(snapshot));
}

std::shared_ptr<const Snapshot> GatewayConfig::Current() const {
  MutexLock lock(&mutex_);
  return current_;
}

}  // namespace sluice::http
