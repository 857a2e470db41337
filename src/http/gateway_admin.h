// The gateway's admin endpoints: /healthz, /readyz, /metrics (Prometheus text), and what people
// read: the status page (/), its data (/status.json) and the values rules reject most
// (/debug/top).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "http/gateway_core.h"
#include "http/status.h"
#include "http/status_history.h"
#include "sluice/mutex.h"
#include "sluice/thread_annotations.h"

namespace sluice::http {

class AdminEndpoints {
 public:
  // `core` must outlive the endpoints.
  explicit AdminEndpoints(GatewayCore& core) : core_(core) {}

  // Routes `request` to its endpoint; 404 when there is none for its target.
  Awaitable<HttpResponse> Handle(HttpRequest request, const Peer& peer, size_t loop);

  // Extra gauges for /metrics, such as requests in flight. Set before the servers start.
  void SetGauges(std::function<std::vector<GaugeValue>()> gauges) { gauges_ = std::move(gauges); }

  // Families of other front ends (the rate limit service's), as Prometheus text, for /metrics.
  // Set before the servers start.
  void SetMoreMetrics(std::function<std::string()> text) { more_metrics_ = std::move(text); }

  // Samples the metrics counters for the status page's charts: once a second, by whoever runs
  // the servers.
  void SampleStatus() SLUICE_EXCLUDES(history_mutex_);

 private:
  // /metrics: the counters, the gauges, and the local counting's figures when rules count
  // locally.
  std::string MetricsText() const;

  // /, /status.json and /debug/top; nothing for other targets.
  std::optional<HttpResponse> StatusRoute(const HttpRequest& request) const
      SLUICE_EXCLUDES(history_mutex_);
  // /status.json, for `query`.
  HttpResponse StatusJsonAnswer(const StatusView& view, std::string_view query) const
      SLUICE_EXCLUDES(history_mutex_);
  // /debug/top, for `query`.
  static HttpResponse DebugTopAnswer(const StatusView& view, std::string_view query);

  GatewayCore& core_;
  std::function<std::vector<GaugeValue>()> gauges_;
  std::function<std::string()> more_metrics_;
  const Clock::TimePoint started_ = core_.clock()->Now();
  mutable Mutex history_mutex_;
  StatusHistory history_ SLUICE_GUARDED_BY(history_mutex_);
};

}  // namespace sluice::http
