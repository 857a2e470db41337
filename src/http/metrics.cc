#include "http/metrics.h"

#include <fmt/core.h>
#include <algorithm>

namespace sluice::http {

void LatencyHistogram::Observe(double seconds) {
  const auto bucket = static_cast<size_t>(
      std::lower_bound(kBounds.begin(), kBounds.end(), seconds) - kBounds.begin());
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_micros_.fetch_add(static_cast<uint64_t>(seconds * 1e6), std::memory_order_relaxed);
}

void LatencyHistogram::Render(const std::string& name, std::string& out) const {
  out += fmt::format("# TYPE {} histogram\n", name);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kBounds.size(); ++i) {
    cumulative += counts_[i].load(std::memory_order_relaxed);
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, kBounds[i], cumulative);
  }
  cumulative += counts_[kBounds.size()].load(std::memory_order_relaxed);
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, cumulative);
  out += fmt::format("{}_sum {}\n", name, static_cast<double>(sum_micros_.load()) / 1e6);
  out += fmt::format("{}_count {}\n", name, count_.load());
}

void Metrics::Count(const std::string& series) {
  std::lock_guard lock(mutex_);
  ++counters_[series];
}

void Metrics::RecordDecision(const Decision& decision, const std::vector<Rule>& rules,
                             double seconds) {
  check_latency_.Observe(seconds);
  Count(fmt::format("sluice_requests_total{{decision=\"{}\"}}",
                    decision.allowed ? "allowed" : "rejected"));
  if (!decision.checked) {
    if (decision.error.code() == StatusCode::kInvalidArgument) {
      Count("sluice_invalid_requests_total");
    } else {
      Count("sluice_store_errors_total");
      Count(fmt::format("sluice_failure_policy_total{{decision=\"{}\"}}",
                        decision.allowed ? "allowed" : "rejected"));
    }
  }
  for (const RuleVerdict& v : decision.verdicts) {
    const std::string& rule = rules[v.rule].name;
    Count(fmt::format("sluice_checks_total{{rule=\"{}\",outcome=\"{}\"}}", rule,
                      v.allowed ? "allowed" : "rejected"));
    if (v.shadow && !v.allowed)
      Count(fmt::format("sluice_shadow_rejections_total{{rule=\"{}\"}}", rule));
  }
}

void Metrics::RecordUpstream(bool ok, double seconds) {
  upstream_latency_.Observe(seconds);
  if (!ok) Count("sluice_upstream_errors_total");
}

std::string Metrics::Render(const std::vector<std::pair<std::string, double>>& gauges) const {
  std::string out;
  {
    std::lock_guard lock(mutex_);
    std::string last_family;
    for (const auto& [series, count] : counters_) {
      const std::string family = series.substr(0, series.find('{'));
      if (family != last_family) out += fmt::format("# TYPE {} counter\n", family);
      last_family = family;
      out += fmt::format("{} {}\n", series, count);
    }
  }
  check_latency_.Render("sluice_check_duration_seconds", out);
  upstream_latency_.Render("sluice_upstream_duration_seconds", out);
  for (const auto& [name, value] : gauges)
    out += fmt::format("# TYPE {} gauge\n{} {}\n", name, name, value);
  return out;
}

}  // namespace sluice::http
