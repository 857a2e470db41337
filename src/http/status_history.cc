#include "http/status_history.h"

#include <algorithm>
#include <limits>

namespace sluice::http {
namespace {

const RuleCounts* Find(const CounterSample& sample, std::string_view rule) {
  for (const auto& [name, counts] : sample.rules) {
    if (name == rule) return &counts;
  }
  return nullptr;
}

double Rate(uint64_t before, uint64_t after, int64_t seconds) {
  if (after < before || seconds <= 0) return 0;
  return static_cast<double>(after - before) / static_cast<double>(seconds);
}

// The upper bound of the bucket in which the `q` quantile of `counts` falls.
double Quantile(const decltype(LatencyCounts::buckets)& counts, uint64_t total, double q) {
  const auto rank = static_cast<uint64_t>(q * static_cast<double>(total));
  uint64_t cumulative = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    cumulative += counts[i];
    if (cumulative > rank) {
      return i < LatencyCounts::kBounds.size() ? LatencyCounts::kBounds[i]
                                               : std::numeric_limits<double>::infinity();
    }
  }
  return 0;
}

}  // namespace

StatusHistory::StatusHistory(size_t seconds) : keep_(seconds + 1) {}

void StatusHistory::Add(CounterSample sample) {
  if (!samples_.empty() && sample.second <= samples_.back().second) {
    if (sample.second < samples_.back().second) return;
    samples_.back() = std::move(sample);
    return;
  }
  samples_.push_back(std::move(sample));
  while (samples_.size() > keep_) samples_.pop_front();
}

std::vector<RatePoint> StatusHistory::Rates(std::string_view rule) const {
  std::vector<RatePoint> points;
  for (size_t i = 1; i < samples_.size(); ++i) {
    const CounterSample& before = samples_[i - 1];
    const CounterSample& after = samples_[i];
    RatePoint point{after.second, 0, 0};
    const RuleCounts* a = Find(before, rule);
    const RuleCounts* b = Find(after, rule);
    if (a != nullptr && b != nullptr) {
      const int64_t dt = after.second - before.second;
      point.allowed = Rate(a->allowed, b->allowed, dt);
      point.rejected = Rate(a->rejected, b->rejected, dt);
    }
    points.push_back(point);
  }
  return points;
}

RecentLatency StatusHistory::Recent(int64_t seconds) const {
  RecentLatency recent;
  if (samples_.size() < 2) return recent;
  const CounterSample& newest = samples_.back();
  auto oldest = std::find_if(samples_.begin(), samples_.end(), [&](const CounterSample& s) {
    return s.second >= newest.second - seconds;
  });
  if (oldest == samples_.end() || &*oldest == &newest) return recent;
  decltype(LatencyCounts::buckets) counts{};
  for (size_t i = 0; i < counts.size(); ++i) {
    const uint64_t a = oldest->check_latency.buckets[i];
    const uint64_t b = newest.check_latency.buckets[i];
    counts[i] = b >= a ? b - a : 0;
    recent.checks += counts[i];
  }
  if (newest.store_errors >= oldest->store_errors) {
    recent.store_errors = newest.store_errors - oldest->store_errors;
  }
  if (recent.checks == 0) return recent;
  const double a = oldest->check_latency.sum_seconds;
  const double b = newest.check_latency.sum_seconds;
  recent.mean_s = b >= a ? (b - a) / static_cast<double>(recent.checks) : 0;
  recent.p50_s = Quantile(counts, recent.checks, 0.5);
  recent.p99_s = Quantile(counts, recent.checks, 0.99);
  return recent;
}

}  // namespace sluice::http
