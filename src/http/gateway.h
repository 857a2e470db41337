// The gateway's request handling, shared by its front ends: the configuration in force
// (gateway_config.h), what every handler shares (gateway_core.h), and the handlers in rooms of
// their own: the reverse proxy (gateway_proxy.h), the check API with nginx's auth_request form
// (gateway_check_api.h), and the admin endpoints (gateway_admin.h). The configuration can be
// replaced while serving.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "http/gateway_admin.h"
#include "http/gateway_check_api.h"
#include "http/gateway_config.h"
#include "http/gateway_core.h"
#include "http/gateway_proxy.h"
#include "sluice/quota_store.h"
#include "sluice/store.h"

namespace sluice::http {

class Gateway {
 public:
  // `stores` holds each event loop's store (the same one for all, or one connection each);
  // `ready` says whether the store can be reached now, for /readyz. `quota_store`, when given, is
  // where durable rules count (one for every loop), and /readyz asks it too. `clock` (the
  // process's steady clock when null) times what the gateway measures and remembers.
  Gateway(std::vector<std::shared_ptr<Store>> stores, std::function<bool()> ready,
          std::shared_ptr<QuotaStore> quota_store = nullptr,
          std::shared_ptr<const Clock> clock = nullptr);

  // Builds the limiters for `config` and puts them in force; on error nothing changes.
  Status Reconfigure(config::Config config) {
    return core_.config().Reconfigure(std::move(config));
  }

  // Reconfigure in two steps, for a reload that puts several parts in force together: the
  // snapshot of `config` (which may fail and changes nothing), then that snapshot in force.
  Result<std::shared_ptr<const Snapshot>> Prepare(config::Config config) {
    return core_.config().Prepare(std::move(config));
  }
  void Commit(std::shared_ptr<const Snapshot> snapshot) {
    core_.config().Commit(std::move(snapshot));
  }

  // The snapshot in force; null before the first Reconfigure.
  std::shared_ptr<const Snapshot> Current() const { return core_.config().Current(); }

  // Sends the counts of synced rules and returns the tokens of leased ones now, and calls `done`
  // when the store has answered (at once when no rule counts locally): before the store stops.
  void FlushLocalCounts(const std::function<void()>& done) const;

  // Where allowed requests go, a pool per event loop; needed before HandleProxy is used.
  void SetUpstreams(std::vector<std::unique_ptr<UpstreamPool>> upstreams) {
    proxy_.SetUpstreams(std::move(upstreams));
  }

  // The reverse proxy: checks every request, then forwards it or answers 429. `loop` is the
  // event loop the request runs on.
  Awaitable<HttpResponse> HandleProxy(HttpRequest request, const Peer& peer, size_t loop) {
    return proxy_.Handle(std::move(request), peer, loop);
  }

  // POST /v1/check (JSON), POST /v1/report, and /v1/auth (nginx auth_request).
  Awaitable<HttpResponse> HandleCheck(HttpRequest request, const Peer& peer, size_t loop) {
    return check_api_.Handle(std::move(request), peer, loop);
  }

  // /healthz, /readyz, /metrics, and the status page's /, /status.json and /debug/top.
  Awaitable<HttpResponse> HandleAdmin(HttpRequest request, const Peer& peer, size_t loop) {
    return admin_.Handle(std::move(request), peer, loop);
  }

  Metrics& metrics() { return core_.metrics(); }

  // Extra gauges for /metrics, such as requests in flight, filled in by whoever runs servers.
  void SetGauges(std::function<std::vector<GaugeValue>()> gauges) {
    admin_.SetGauges(std::move(gauges));
  }

  // Where a line per proxied or checked request goes; null (the default): nowhere. Set before
  // the servers start.
  void SetAccessLog(std::shared_ptr<AccessLog> log) { core_.SetAccessLog(std::move(log)); }

  // Families of other front ends (the rate limit service's), as Prometheus text, for /metrics.
  void SetMoreMetrics(std::function<std::string()> text) { admin_.SetMoreMetrics(std::move(text)); }

  // The values rules reject most, for /debug/top; the rate limit service records its limits'
  // rejections here too.
  std::shared_ptr<TopRejected> top_rejected() const { return core_.top_rejected(); }

  // Samples the metrics counters for the status page's charts: once a second, by whoever runs
  // the servers.
  void SampleStatus() { admin_.SampleStatus(); }

 private:
  GatewayCore core_;  // first: the handlers hold references to it
  ProxyHandler proxy_{core_};
  CheckApi check_api_{core_};
  AdminEndpoints admin_{core_};
};

}  // namespace sluice::http
