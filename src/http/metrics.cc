#include "http/metrics.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "sluice/version.h"

namespace sluice::http {

namespace {

uint64_t Get(const std::atomic<uint64_t>& counter) {
  return counter.load(std::memory_order_relaxed);
}

void Add(std::atomic<uint64_t>& counter, uint64_t n = 1) {
  counter.fetch_add(n, std::memory_order_relaxed);
}

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void RenderHeader(std::string& out, std::string_view family, std::string_view help,
                  std::string_view type) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", family, help, family, type);
}

// One histogram's lines; `labels` go before `le`.
void RenderHistogram(std::string& out, std::string_view family, const std::string& labels,
                     const LatencyCounts& counts) {
  const std::string prefix = labels.empty() ? "" : labels + ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < LatencyCounts::kBounds.size(); ++i) {
    cumulative += counts.buckets[i];
    out += fmt::format("{}_bucket{{{}le=\"{}\"}} {}\n", family, prefix, LatencyCounts::kBounds[i],
                       cumulative);
  }
  cumulative += counts.buckets.back();
  out += fmt::format("{}_bucket{{{}le=\"+Inf\"}} {}\n", family, prefix, cumulative);
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += fmt::format("{}_sum{} {}\n", family, braces, counts.sum_seconds);
  out += fmt::format("{}_count{} {}\n", family, braces, counts.count);
}

// The nodes of every loop's store, one entry per node.
std::map<std::string, StoreNodeStatus> MergeNodes(const std::vector<StoreNodeStatus>& nodes) {
  std::map<std::string, StoreNodeStatus> merged;
  for (const StoreNodeStatus& node : nodes) {
    auto [it, fresh] = merged.try_emplace(node.node, node);
    if (fresh) continue;
    it->second.connected = it->second.connected && node.connected;
    it->second.round_trips += node.round_trips;
  }
  return merged;
}

}  // namespace

LimitUsage CountUsage(int64_t limit, double near_ratio, int64_t used_before, int64_t hits) {
  LimitUsage usage;
  if (hits <= 0) return usage;
  used_before = std::max<int64_t>(used_before, 0);
  const auto threshold = static_cast<int64_t>(std::floor(static_cast<double>(limit) * near_ratio));
  const int64_t used_after = used_before + hits;
  if (used_after > limit) {
    if (used_before >= limit) {
      usage.over = static_cast<uint64_t>(hits);
    } else {
      usage.over = static_cast<uint64_t>(used_after - limit);
      usage.near = static_cast<uint64_t>(limit - std::max(threshold, used_before));
    }
  } else {
    usage.within = static_cast<uint64_t>(hits);
    if (used_after > threshold) {
      usage.near = static_cast<uint64_t>(std::min(hits, used_after - threshold));
    }
  }
  return usage;
}

std::string LabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void RenderFamily(std::string& out, std::string_view family, std::string_view help,
                  const Series& series, std::string_view type) {
  RenderHeader(out, family, help, type);
  for (const auto& [labels, value] : series) {
    out += labels.empty() ? fmt::format("{} {}\n", family, value)
                          : fmt::format("{}{{{}}} {}\n", family, labels, value);
  }
}

void RenderHistograms(std::string& out, std::string_view family, std::string_view help,
                      const std::vector<std::pair<std::string, LatencyCounts>>& series) {
  RenderHeader(out, family, help, "histogram");
  for (const auto& [labels, counts] : series) RenderHistogram(out, family, labels, counts);
}

Metrics::Metrics() : last_reload_ok_(Now()) {}

RuleCounters* Metrics::ForRule(const std::string& name) {
  MutexLock lock(&rules_mutex_);
  std::unique_ptr<RuleCounters>& counters = rules_[name];
  if (!counters) counters = std::make_unique<RuleCounters>();
  return counters.get();
}

void Metrics::RecordDecision(const Decision& decision, const std::vector<RuleCounters*>& rules,
                             const std::function<int64_t(size_t)>& cost_of, double near_ratio,
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
    if (!decision.checked) continue;  // no bucket answered: nothing is near its limit
    const int64_t cost = cost_of(v.rule);
    // An allowed request's tokens are gone from `remaining`; a refused one's never left.
    const int64_t used_before = v.limit.capacity - v.remaining - (v.allowed ? cost : 0);
    Add(rule.near_limit, CountUsage(v.limit.capacity, near_ratio, used_before, cost).near);
  }
}

void Metrics::RecordUpstream(bool ok, double seconds) {
  upstream_latency_.Observe(seconds);
  if (!ok) Add(upstream_errors_);
}

void Metrics::RecordReload(bool ok) {
  Add(ok ? reloads_ok_ : reloads_failed_);
  if (ok) last_reload_ok_.store(Now(), std::memory_order_relaxed);
}

std::string Metrics::Render(const std::vector<GaugeValue>& gauges,
                            const std::vector<StoreNodeStatus>& nodes) const {
  std::string out;
  RenderFamily(out, "sluice_build_info", "The running version of Sluice; always 1.",
               {{fmt::format(R"(version="{}")", SLUICE_VERSION_STRING), 1}}, "gauge");
  RenderFamily(out, "sluice_requests_total", "Requests checked, by the decision.",
               {{R"(decision="allowed")", Get(requests_allowed_)},
                {R"(decision="rejected")", Get(requests_rejected_)}});
  RenderFamily(out, "sluice_invalid_requests_total",
               "Requests refused because their attributes cannot be keys.",
               {{"", Get(invalid_requests_)}});
  Series errors;
  for (size_t code = 1; code < kStatusCodes; ++code) {
    const auto status = static_cast<StatusCode>(code);
    if (status == StatusCode::kInvalidArgument) continue;  // counted as invalid requests
    std::string label = StatusCodeName(status);  // "deadline exceeded" -> deadline_exceeded
    std::replace(label.begin(), label.end(), ' ', '_');
    errors.emplace_back(fmt::format(R"(code="{}")", label), Get(store_errors_[code]));
  }
  RenderFamily(out, "sluice_store_errors_total",
               "Checks the store could not answer, by the reason; the failure policy decided them.",
               errors);
  RenderFamily(out, "sluice_failure_policy_total",
               "Requests the failure policy decided while the store could not answer.",
               {{R"(decision="allowed")", Get(failure_allowed_)},
                {R"(decision="rejected")", Get(failure_rejected_)}});
  RenderFamily(out, "sluice_upstream_errors_total",
               "Forwarded requests the upstream did not answer (502 or 504).",
               {{"", Get(upstream_errors_)}});
  RenderFamily(out, "sluice_over_limit_cache_rejections_total",
               "Requests rejected by the over-limit cache without a store round trip.",
               {{"", Get(cache_rejections_)}});
  RenderFamily(out, "sluice_all_or_nothing_refund_fallbacks_total",
               "All-or-nothing checks made as refund: the store could not take them in one step.",
               {{"", Get(refund_fallbacks_)}});
  RenderFamily(
      out, "sluice_config_reloads_total", "Configuration reloads (SIGHUP), by the result.",
      {{R"(result="success")", Get(reloads_ok_)}, {R"(result="failure")", Get(reloads_failed_)}});
  out += fmt::format(
      "# HELP sluice_config_last_reload_success_timestamp_seconds When the configuration in "
      "force was taken (the start, or the last successful reload), in seconds since the epoch.\n"
      "# TYPE sluice_config_last_reload_success_timestamp_seconds gauge\n"
      "sluice_config_last_reload_success_timestamp_seconds {:.3f}\n",
      last_reload_ok_.load(std::memory_order_relaxed));
  Series checks;
  Series shadow;
  Series near;
  {
    MutexLock lock(&rules_mutex_);
    for (const auto& [name, counters] : rules_) {
      const std::string rule = fmt::format(R"(rule="{}")", LabelValue(name));
      checks.emplace_back(rule + R"(,outcome="allowed")", Get(counters->allowed));
      checks.emplace_back(rule + R"(,outcome="rejected")", Get(counters->rejected));
      shadow.emplace_back(rule, Get(counters->shadow_rejections));
      near.emplace_back(rule, Get(counters->near_limit));
    }
  }
  RenderFamily(out, "sluice_checks_total", "Rule verdicts, by the rule and the outcome.", checks);
  RenderFamily(out, "sluice_shadow_rejections_total",
               "Requests a shadow rule would have rejected, by the rule.", shadow);
  RenderFamily(out, "sluice_near_limit_total",
               "Tokens taken while a rule's bucket was used past near_limit_ratio of its capacity, "
               "by the rule.",
               near);
  RenderHistograms(out, "sluice_check_duration_seconds",
                   "How long a request's check took, its store round trip included.",
                   {{"", check_latency_.Counts()}});
  RenderHistograms(out, "sluice_upstream_duration_seconds",
                   "How long the upstream took to answer a forwarded request.",
                   {{"", upstream_latency_.Counts()}});
  const std::map<std::string, StoreNodeStatus> merged = MergeNodes(nodes);
  Series up;
  std::vector<std::pair<std::string, LatencyCounts>> trips;
  for (const auto& [name, node] : merged) {
    const std::string label = fmt::format(R"(node="{}")", LabelValue(name));
    up.emplace_back(label, node.connected ? 1 : 0);
    trips.emplace_back(label, node.round_trips);
  }
  RenderFamily(out, "sluice_store_up",
               "Whether every connection to the store node is up (1) or not (0).", up, "gauge");
  RenderHistograms(out, "sluice_store_round_trip_duration_seconds",
                   "Store calls from submission to answer, by the store node; answered calls only.",
                   trips);
  for (const GaugeValue& gauge : gauges) {
    RenderHeader(out, gauge.name, gauge.help, "gauge");
    out += fmt::format("{} {}\n", gauge.name, gauge.value);
  }
  return out;
}

uint64_t Metrics::StoreErrors() const {
  uint64_t total = 0;
  for (const auto& errors : store_errors_) total += Get(errors);
  return total;
}

std::string Metrics::RenderLocalCounting(const LocalCountingStats& stats) {
  std::string out;
  RenderFamily(out, "sluice_local_decisions_total",
               "Checks decided from local counts or a lease, without the store.",
               {{"", stats.local_decisions}});
  RenderFamily(out, "sluice_local_counting_store_calls_total",
               "Store calls made by the local counts, by the kind.",
               {{R"(kind="sync")", stats.sync_calls},
                {R"(kind="lease")", stats.lease_calls},
                {R"(kind="any")", stats.store_calls}});
  RenderFamily(
      out, "sluice_leased_tokens_total", "Tokens leased from the store, and returned.",
      {{R"(kind="granted")", stats.tokens_leased}, {R"(kind="returned")", stats.tokens_returned}});
  RenderFamily(out, "sluice_sync_failures_total", "Synced counts the store could not take.",
               {{"", stats.sync_failures}});
  RenderFamily(out, "sluice_local_counting_evictions_total",
               "Locally counted buckets forgotten at store.max_buckets, nearest to full first, "
               "each owing the store nothing.",
               {{"", stats.evictions}});
  RenderFamily(out, "sluice_local_counting_refusals_total",
               "Checks given the failure policy because the local counts held store.max_buckets "
               "buckets, each owing the store.",
               {{"", stats.refusals}});
  return out;
}

}  // namespace sluice::http
