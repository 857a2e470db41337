// Counters and histograms of a running gateway, rendered in Prometheus's text format by its
// conventions: every family with # HELP and # TYPE, base units in names, _total on counters.
// Recording takes no lock: every counter is an atomic found before the request (a rule's
// counters when its configuration is put in force).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/decision.h"
#include "sluice/latency_histogram.h"
#include "sluice/local_counting_store.h"
#include "sluice/mutex.h"
#include "sluice/rule.h"
#include "sluice/store.h"
#include "sluice/thread_annotations.h"

namespace sluice::http {

// The counters of one rule, kept across reloads for as long as the process runs.
struct RuleCounters {
  std::atomic<uint64_t> allowed{0};
  std::atomic<uint64_t> rejected{0};
  std::atomic<uint64_t> shadow_rejections{0};
  std::atomic<uint64_t> near_limit{0};  // tokens taken past near_limit_ratio of the capacity
};

// How envoyproxy/ratelimit counts one call of `hits` on a limit of `limit` requests, of which
// `used_before` were used before the call: hits within the limit, those among them (or, for a
// call that goes over, those it used below the limit) past the near-limit threshold
// floor(limit * near_ratio), and hits past the limit.
struct LimitUsage {
  uint64_t within = 0;
  uint64_t near = 0;
  uint64_t over = 0;
};
LimitUsage CountUsage(int64_t limit, double near_ratio, int64_t used_before, int64_t hits);

// The number of StatusCode values.
inline constexpr size_t kStatusCodes = static_cast<size_t>(StatusCode::kFailedPrecondition) + 1;

// A gauge's current value, for Metrics::Render.
struct GaugeValue {
  std::string name;
  std::string help;
  double value = 0;
};

// One series of a family: its labels (`name="value",...`, empty for none) and its value.
using Series = std::vector<std::pair<std::string, uint64_t>>;

// Appends a family of counters (`type` "counter") or gauges (`type` "gauge") with its HELP and
// TYPE lines.
void RenderFamily(std::string& out, std::string_view family, std::string_view help,
                  const Series& series, std::string_view type = "counter");

// Appends a histogram family: HELP and TYPE once, then one histogram per entry of `series`
// (labels as in Series, empty for none).
void RenderHistograms(std::string& out, std::string_view family, std::string_view help,
                      const std::vector<std::pair<std::string, LatencyCounts>>& series);

// A label's value escaped as Prometheus's text format asks (backslash, quote, newline).
std::string LabelValue(std::string_view value);

// Everything /metrics reports. Thread-safe.
class Metrics {
 public:
  Metrics();

  // The counters of the rule named `name`, made on first use. The pointer stays valid as long
  // as the metrics do.
  RuleCounters* ForRule(const std::string& name) SLUICE_EXCLUDES(rules_mutex_);

  // Counts a decision: per rule and outcome, near-limit tokens (`cost_of(i)`: what the
  // request asked of the limiter's rule i; `near_ratio`: see CountUsage), shadow rejections,
  // failure-policy decisions, store errors and invalid requests; `rules[i]` counts the
  // limiter's rule i; `seconds` is how long the check took.
  void RecordDecision(const Decision& decision, const std::vector<RuleCounters*>& rules,
                      const std::function<int64_t(size_t)>& cost_of, double near_ratio,
                      double seconds);

  void RecordUpstream(bool ok, double seconds);

  // A configuration reload (SIGHUP) taken, or refused.
  void RecordReload(bool ok);

  // The whole text: the counters, `gauges`, and the store's `nodes` (the same node seen by
  // several event loops' stores counted once: connected only if every connection is).
  std::string Render(const std::vector<GaugeValue>& gauges,
                     const std::vector<StoreNodeStatus>& nodes) const SLUICE_EXCLUDES(rules_mutex_);

  // The counters of the local counts in force (synced and leased rules), in the same format;
  // they start again from zero when a reload makes new local counts.
  static std::string RenderLocalCounting(const LocalCountingStats& stats);

  // For the status page: the store's errors so far, of every code, and its checks' latencies.
  uint64_t StoreErrors() const;
  LatencyCounts CheckLatency() const { return check_latency_.Counts(); }

 private:
  std::atomic<uint64_t> requests_allowed_{0};
  std::atomic<uint64_t> requests_rejected_{0};
  std::atomic<uint64_t> invalid_requests_{0};
  // By StatusCode: why the store could not be asked.
  std::array<std::atomic<uint64_t>, kStatusCodes> store_errors_{};
  std::atomic<uint64_t> failure_allowed_{0};
  std::atomic<uint64_t> failure_rejected_{0};
  std::atomic<uint64_t> upstream_errors_{0};
  std::atomic<uint64_t> cache_rejections_{0};
  std::atomic<uint64_t> refund_fallbacks_{0};  // all-or-nothing checks made as refund
  std::atomic<uint64_t> reloads_ok_{0};
  std::atomic<uint64_t> reloads_failed_{0};
  // Seconds since the epoch of the last configuration taken: the start, then each reload.
  std::atomic<double> last_reload_ok_{0};
  LatencyHistogram check_latency_;
  LatencyHistogram upstream_latency_;

  mutable Mutex rules_mutex_;  // the counters themselves are atomics
  std::map<std::string, std::unique_ptr<RuleCounters>> rules_ SLUICE_GUARDED_BY(rules_mutex_);
};

}  // namespace sluice::http
