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

HistogramCounts LatencyHistogram::Counts() const {
  static_assert(kBounds.size() + 1 == kHistogramBuckets);
  HistogramCounts counts;
  for (size_t i = 0; i < counts_.size(); ++i) {
    counts.buckets[i] = counts_[i].load(std::memory_order_relaxed);
  }
  counts.count = count_.load(std::memory_order_relaxed);
  counts.sum_micros = sum_micros_.load(std::memory_order_relaxed);
  return counts;
}

namespace {

uint64_t Get(const std::atomic<uint64_t>& counter) {
  return counter.load(std::memory_order_relaxed);
}

void Add(std::atomic<uint64_t>& counter) { counter.fetch_add(1, std::memory_order_relaxed); }

void RenderFamily(std::string& out, const std::string& family,
                  const std::vector<std::pair<std::string, uint64_t>>& series) {
  out += fmt::format("# TYPE {} counter\n", family);
  for (const auto& [labels, value] : series) {
    out += labels.empty() ? fmt::format("{} {}\n", family, value)
                          : fmt::format("{}{{{}}} {}\n", family, labels, value);
  }
}

}  // namespace

RuleCounters* Metrics::ForRule(const std::string& name) {
  std::lock_guard lock(rules_mutex_);
  std::unique_ptr<RuleCounters>& counters = rules_[name];
  if (!counters) counters = std::make_unique<RuleCounters>();
  return counters.get();
}

void Metrics::RecordDecision(const Decision& decision, const std::vector<RuleCounters*>& rules,
                             double seconds) {
  check_latency_.Observe(seconds);
  Add(decision.allowed ? requests_allowed_ : requests_rejected_);
  if (decision.from_cache) Add(cache_rejections_);
  if (decision.fell_back_to_refund) Add(refund_fallbacks_);
  if (!decision.checked) {
    if (decision.error.code() == StatusCode::kInvalidArgument) {
      Add(invalid_requests_);
    } else {
      Add(store_errors_[static_cast<size_t>(decision.error.code())]);
      Add(decision.allowed ? failure_allowed_ : failure_rejected_);
    }
  }
  for (const RuleVerdict& v : decision.verdicts) {
    RuleCounters& rule = *rules[v.rule];
    Add(v.allowed ? rule.allowed : rule.rejected);
    if (v.shadow && !v.allowed) Add(rule.shadow_rejections);
  }
}

void Metrics::RecordUpstream(bool ok, double seconds) {
  upstream_latency_.Observe(seconds);
  if (!ok) Add(upstream_errors_);
}

std::string Metrics::Render(const std::vector<std::pair<std::string, double>>& gauges) const {
  std::string out;
  RenderFamily(out, "sluice_requests_total",
               {{R"(decision="allowed")", Get(requests_allowed_)},
                {R"(decision="rejected")", Get(requests_rejected_)}});
  RenderFamily(out, "sluice_invalid_requests_total", {{"", Get(invalid_requests_)}});
  std::vector<std::pair<std::string, uint64_t>> errors;
  for (size_t code = 1; code < kStatusCodes; ++code) {
    const auto status = static_cast<StatusCode>(code);
    if (status == StatusCode::kInvalidArgument) continue;  // counted as invalid requests
    std::string label = StatusCodeName(status);  // "deadline exceeded" -> deadline_exceeded
    std::replace(label.begin(), label.end(), ' ', '_');
    errors.emplace_back(fmt::format(R"(code="{}")", label), Get(store_errors_[code]));
  }
  RenderFamily(out, "sluice_store_errors_total", errors);
  RenderFamily(out, "sluice_failure_policy_total",
               {{R"(decision="allowed")", Get(failure_allowed_)},
                {R"(decision="rejected")", Get(failure_rejected_)}});
  RenderFamily(out, "sluice_upstream_errors_total", {{"", Get(upstream_errors_)}});
  RenderFamily(out, "sluice_over_limit_cache_rejections_total", {{"", Get(cache_rejections_)}});
  RenderFamily(out, "sluice_all_or_nothing_refund_fallbacks_total", {{"", Get(refund_fallbacks_)}});
  std::vector<std::pair<std::string, uint64_t>> checks;
  std::vector<std::pair<std::string, uint64_t>> shadow;
  {
    std::lock_guard lock(rules_mutex_);
    for (const auto& [name, counters] : rules_) {
      checks.emplace_back(fmt::format(R"(rule="{}",outcome="allowed")", name),
                          Get(counters->allowed));
      checks.emplace_back(fmt::format(R"(rule="{}",outcome="rejected")", name),
                          Get(counters->rejected));
      shadow.emplace_back(fmt::format(R"(rule="{}")", name), Get(counters->shadow_rejections));
    }
  }
  RenderFamily(out, "sluice_checks_total", checks);
  RenderFamily(out, "sluice_shadow_rejections_total", shadow);
  check_latency_.Render("sluice_check_duration_seconds", out);
  upstream_latency_.Render("sluice_upstream_duration_seconds", out);
  for (const auto& [name, value] : gauges)
    out += fmt::format("# TYPE {} gauge\n{} {}\n", name, name, value);
  return out;
}

uint64_t Metrics::StoreErrors() const {
  uint64_t total = 0;
  for (const auto& errors : store_errors_) total += Get(errors);
  return total;
}

std::string Metrics::RenderLocalCounting(const LocalCountingStats& stats) {
  std::string out;
  RenderFamily(out, "sluice_local_decisions_total", {{"", stats.local_decisions}});
  RenderFamily(out, "sluice_local_counting_store_calls_total",
               {{R"(kind="sync")", stats.sync_calls},
                {R"(kind="lease")", stats.lease_calls},
                {R"(kind="any")", stats.store_calls}});
  RenderFamily(
      out, "sluice_leased_tokens_total",
      {{R"(kind="granted")", stats.tokens_leased}, {R"(kind="returned")", stats.tokens_returned}});
  RenderFamily(out, "sluice_sync_failures_total", {{"", stats.sync_failures}});
  return out;
}

}  // namespace sluice::http
