// The gateway's configuration in force, kept apart from the handlers that read it (as Envoy keeps
// a filter's configuration apart from the filter): one immutable Snapshot, built whole from a
// Config and swapped whole when the configuration is replaced while serving.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "http/metrics.h"
#include "http/rejected_values.h"
#include "sluice/limiter.h"
#include "sluice/local_counting_store.h"
#include "sluice/mutex.h"
#include "sluice/quota_store.h"
#include "sluice/store.h"
#include "sluice/thread_annotations.h"

namespace sluice::http {

// One configuration and the limiters made from it, one per event loop (each on that loop's
// store); requests keep the snapshot they started with.
struct Snapshot {
  config::Config config;
  std::vector<std::unique_ptr<Limiter>> limiters;
  std::vector<RuleCounters*> rule_counters;  // the metrics of each rule, by index
  // Shared by the loops' limiters when a rule counts locally; null otherwise.
  std::shared_ptr<LocalCountingStore> local_counts;
  // Some rule's cost comes from the upstream's response (Rule::cost_from_header).
  bool reports_costs = false;
  // The Host given to a request that came without one (HTTP/1.0): the upstream's address.
  std::string upstream_authority;
  std::vector<RejectedValues*> rejected_values;  // the values each rule rejects, by index

  const std::vector<Rule>& rules() const { return limiters.front()->rules(); }
};

// The snapshot in force. Thread-safe: handlers on every event loop read it while a reload
// replaces it.
class GatewayConfig {
 public:
  // `stores` holds each event loop's store; `quota_store`, when given, is where durable rules
  // count. A snapshot's rules find their counters in `metrics` and their rejected values in
  // `top_rejected`, which must outlive this object.
  GatewayConfig(std::vector<std::shared_ptr<Store>> stores, std::shared_ptr<QuotaStore> quota_store,
                Metrics& metrics, TopRejected& top_rejected);

  // Builds the limiters for `config` and puts them in force; on error the snapshot in force
  // stays.
  Status Reconfigure(config::Config config) SLUICE_EXCLUDES(mutex_);

  // The snapshot of `config`, or why it cannot be built; nothing in force changes, so that a
  // reload can prepare it beside its other parts and refuse them all together.
  Result<std::shared_ptr<const Snapshot>> Prepare(config::Config config);

  // Puts `snapshot`, from Prepare, in force.
  void Commit(std::shared_ptr<const Snapshot> snapshot) SLUICE_EXCLUDES(mutex_);

  // The snapshot in force; null before the first Reconfigure.
  std::shared_ptr<const Snapshot> Current() const SLUICE_EXCLUDES(mutex_);

  const std::vector<std::shared_ptr<Store>>& stores() const { return stores_; }
  const std::shared_ptr<QuotaStore>& quota_store() const { return quota_store_; }

 private:
  const std::vector<std::shared_ptr<Store>> stores_;
  const std::shared_ptr<QuotaStore> quota_store_;
  Metrics& metrics_;
  TopRejected& top_rejected_;
  mutable Mutex mutex_;
  std::shared_ptr<const Snapshot> current_ SLUICE_GUARDED_BY(mutex_);
};

}  // namespace sluice::http
