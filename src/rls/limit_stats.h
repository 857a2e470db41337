// The rate limit service's statistics per limit, as envoyproxy/ratelimit keeps them (total hits,
// over limit, near limit, within limit, over limit by the local cache, shadow mode), with labels
// bounded by the configuration: the domain, and the limit's name or its descriptor path.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/charging.h"
#include "rls/rate_limit_plan.h"
#include "sluice/mutex.h"
#include "sluice/thread_annotations.h"
#include "sluice/token_bucket.h"

namespace sluice::rls {

// The counters of one limit; hits, as envoyproxy/ratelimit counts them.
struct LimitCounters {
  std::atomic<uint64_t> hits{0};
  std::atomic<uint64_t> over_limit{0};
  std::atomic<uint64_t> near_limit{0};
  std::atomic<uint64_t> within_limit{0};
  std::atomic<uint64_t> over_limit_with_local_cache{0};
  std::atomic<uint64_t> shadow_mode{0};
};

// The `limit` label of limits a request brings itself (a descriptor's own `limit`): one per
// domain, whatever the request says, so that callers cannot grow the series.
inline constexpr const char* kRequestLimitLabel = "_request";

// Every limit's counters, kept for as long as the process runs (across reloads). Thread-safe.
class LimitStats {
 public:
  // The counters of (`domain`, `limit`), made on first use; valid as long as the stats are.
  LimitCounters* For(const std::string& domain, const std::string& limit) SLUICE_EXCLUDES(mutex_);

  // The six families, sluice_rls_hits_total and the rest, in Prometheus's text format.
  std::string Render() const SLUICE_EXCLUDES(mutex_);

 private:
  mutable Mutex mutex_;  // the map's; the counters are atomic, and live as long as the stats
  std::map<std::pair<std::string, std::string>, std::unique_ptr<LimitCounters>> limits_
      SLUICE_GUARDED_BY(mutex_);
};

// How one call's descriptors count. `counters[i]` is descriptor i's (null: not counted);
// `charges` says what became of each plan op (answered by the over-limit cache, or by the store),
// `replies[k]` what plan op k answered. Hits within the limit and near it come from the reply's
// `remaining` (the bucket's requests left after the call, so used before = limit - remaining -
// hits); a call over the limit leaves the bucket in debt with nothing left, so its use comes
// from `reset_ms` (the time until the bucket is full again, at limit per period).
void CountCall(const Plan& plan, const std::vector<LimitCounters*>& counters,
               const Charges& charges, const std::vector<BucketReply>& replies, double near_ratio);

// A call the store could not answer: only its hits count.
void CountUnchecked(const Plan& plan, const std::vector<LimitCounters*>& counters);

}  // namespace sluice::rls
