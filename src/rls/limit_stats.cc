#include "rls/limit_stats.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "http/metrics.h"

namespace sluice::rls {
namespace {

using Kind = MatchedDescriptor::Kind;

void Add(std::atomic<uint64_t>& counter, uint64_t n) {
  if (n > 0) counter.fetch_add(n, std::memory_order_relaxed);
}

// What the limit had used before the call, from the bucket's reply.
int64_t UsedBefore(const MatchedDescriptor& p, const BucketReply& reply) {
  const auto limit = static_cast<int64_t>(p.limit.requests_per_unit);
  if (reply.allowed) return limit - reply.remaining - p.hits;
  const double per_ms = static_cast<double>(limit) / static_cast<double>(p.limit.PeriodMs());
  // Refused: in debt afterwards, so past the limit, whatever rounding says.
  const int64_t used_after = std::max(
      limit + 1, static_cast<int64_t>(std::llround(static_cast<double>(reply.reset_ms) * per_ms)));
  return used_after - p.hits;
}

}  // namespace

LimitCounters* LimitStats::For(const std::string& domain, const std::string& limit) {
  MutexLock lock(&mutex_);
  std::unique_ptr<LimitCounters>& counters = limits_[{domain, limit}];
  if (!counters) counters = std::make_unique<LimitCounters>();
  return counters.get();
}

std::string LimitStats::Render() const {
  struct Family {
    const char* name;
    const char* help;
    std::atomic<uint64_t> LimitCounters::*counter;
  };
  static constexpr Family kFamilies[] = {
      {"sluice_rls_hits_total", "Hits of rate limit service calls on the limit.",
       &LimitCounters::hits},
      {"sluice_rls_over_limit_total", "Hits past the limit (the over-limit cache's included).",
       &LimitCounters::over_limit},
      {"sluice_rls_near_limit_total",
       "Hits within the limit once more than rls.near_limit_ratio of it was used.",
       &LimitCounters::near_limit},
      {"sluice_rls_within_limit_total", "Hits within the limit.", &LimitCounters::within_limit},
      {"sluice_rls_over_limit_with_local_cache_total",
       "Hits answered OVER_LIMIT by the over-limit cache, not sent to the store.",
       &LimitCounters::over_limit_with_local_cache},
      {"sluice_rls_shadow_mode_total", "Hits over a shadow-mode limit, answered OK.",
       &LimitCounters::shadow_mode},
  };
  std::vector<std::pair<std::string, const LimitCounters*>> limits;
  {
    MutexLock lock(&mutex_);
    for (const auto& [key, counters] : limits_) {
      limits.emplace_back(fmt::format(R"(domain="{}",limit="{}")", http::LabelValue(key.first),
                                      http::LabelValue(key.second)),
                          counters.get());
    }
  }
  std::string out;
  for (const Family& family : kFamilies) {
    http::Series series;
    series.reserve(limits.size());
    for (const auto& [labels, counters] : limits) {
      series.emplace_back(labels, (counters->*family.counter).load(std::memory_order_relaxed));
    }
    http::RenderFamily(out, family.name, family.help, series);
  }
  return out;
}

void CountCall(const Plan& plan, const std::vector<LimitCounters*>& counters,
               const Charges& charges, const std::vector<BucketReply>& replies, double near_ratio) {
  for (size_t i = 0; i < plan.descriptors.size(); ++i) {
    const MatchedDescriptor& p = plan.descriptors[i];
    LimitCounters* c = counters[i];
    if (c == nullptr || p.kind != Kind::kLimited) continue;
    const auto hits = static_cast<uint64_t>(p.hits);
    Add(c->hits, hits);
    if (!p.op) {  // a limit of 0: every hit is over it
      Add(c->over_limit, hits);
      if (p.shadow) Add(c->shadow_mode, hits);
      continue;
    }
    if (charges.ops[*p.op].from_cache) {
      Add(c->over_limit, hits);
      Add(c->over_limit_with_local_cache, hits);
      continue;
    }
    const BucketReply& reply = replies[*p.op];
    const http::LimitUsage usage =
        http::CountUsage(p.limit.requests_per_unit, near_ratio, UsedBefore(p, reply), p.hits);
    Add(c->within_limit, usage.within);
    Add(c->near_limit, usage.near);
    Add(c->over_limit, usage.over);
    if (p.shadow && !reply.allowed) Add(c->shadow_mode, hits);
  }
}

void CountUnchecked(const Plan& plan, const std::vector<LimitCounters*>& counters) {
  for (size_t i = 0; i < plan.descriptors.size(); ++i) {
    if (counters[i] != nullptr && plan.descriptors[i].kind == Kind::kLimited) {
      Add(counters[i]->hits, static_cast<uint64_t>(plan.descriptors[i].hits));
    }
  }
}

}  // namespace sluice::rls
