// The gateway's request handling, shared by its front ends: the configuration in force, the
// limiter built from it, and the metrics. The configuration can be replaced while serving.
#pragma once

#include <utility>  // before asio: Boost 1.74's coroutine support needs it first

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "config/config.h"
#include "http/access_log.h"
#include "http/metrics.h"
#include "http/rejected_values.h"
#include "http/server.h"
#include "http/status_history.h"
#include "http/throttled_log.h"
#include "http/upstream.h"
#include "sluice/limiter.h"
#include "sluice/quota_store.h"
#include "sluice/store.h"

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

class Gateway {
 public:
  // `stores` holds each event loop's store (the same one for all, or one connection each);
  // `ready` says whether the store can be reached now, for /readyz. `quota_store`, when given, is
  // where durable rules count (one for every loop), and /readyz asks it too.
  Gateway(std::vector<std::shared_ptr<Store>> stores, std::function<bool()> ready,
          std::shared_ptr<QuotaStore> quota_store = nullptr);

  // Builds the limiters for `config` and puts them in force; on error nothing changes.
  Status Apply(config::Config config);

  std::shared_ptr<const Snapshot> Current() const;

  // Sends the counts of synced rules and returns the tokens of leased ones now, and calls `done`
  // when the store has answered (at once when no rule counts locally): before the store stops.
  void FlushLocalCounts(std::function<void()> done) const;

  // Where allowed requests go, a pool per event loop; needed before HandleProxy is used.
  void SetUpstreams(std::vector<std::unique_ptr<UpstreamPool>> upstreams) {
    upstreams_ = std::move(upstreams);
  }

  // The reverse proxy: checks every request, then forwards it or answers 429. `loop` is the
  // event loop the request runs on.
  Awaitable<HttpResponse> HandleProxy(HttpRequest request, const Peer& peer, size_t loop);

  // POST /v1/check (JSON) and /v1/auth (nginx auth_request).
  Awaitable<HttpResponse> HandleCheck(HttpRequest request, const Peer& peer, size_t loop);

  // /healthz, /readyz, /metrics.
  Awaitable<HttpResponse> HandleAdmin(HttpRequest request, const Peer& peer, size_t loop);

  Metrics& metrics() { return metrics_; }

  // Extra gauges for /metrics, such as requests in flight, filled in by whoever runs servers.
  void SetGauges(std::function<std::vector<GaugeValue>()> gauges);

  // Where a line per proxied or checked request goes; null (the default): nowhere. Set before
  // the servers start.
  void SetAccessLog(std::shared_ptr<AccessLog> log) { access_log_ = std::move(log); }

  // Families of other front ends (the rate limit service's), as Prometheus text, for /metrics.
  void SetMoreMetrics(std::function<std::string()> text);

  // The values rules reject most, for /debug/top; the rate limit service records its limits'
  // rejections here too.
  std::shared_ptr<TopRejected> top_rejected() const { return top_rejected_; }

  // Samples the metrics counters for the status page's charts: once a second, by whoever runs
  // the servers.
  void SampleStatus();

 private:
  // Checks `request` with the snapshot's limiter and records it in the metrics; `seconds`, when
  // given, gets how long the check took.
  Awaitable<Decision> Decide(const Snapshot& snapshot, const Request& request, size_t loop,
                             double* seconds = nullptr);

  // Why the gateway is not ready ("store unreachable", "quota store unreachable"); none when it is.
  std::optional<std::string> Unready() const;

  // The access log's line for a request answered `status`, when there is an access log.
  void LogAccess(std::string_view client, std::string_view method, std::string_view path,
                 unsigned status, const Decision& decision, const std::vector<Rule>& rules,
                 double store_seconds) const;

  void LogShadowRejections(const Decision& decision, const std::vector<Rule>& rules);

  // /metrics: the counters, the gauges, and the local counting's figures when rules count locally.
  std::string MetricsText() const;

  // Counts the values of the enforced rules that rejected `request`.
  static void RecordRejectedValues(const Snapshot& snapshot, const Request& request,
                                   const Decision& decision);

  // /, /status.json and /debug/top; nothing for other targets.
  std::optional<HttpResponse> StatusRoute(const HttpRequest& request) const;

  Awaitable<HttpResponse> CheckJson(const HttpRequest& request, size_t loop);
  // POST /v1/report: charges a request's rules what it cost, after the fact.
  Awaitable<HttpResponse> ReportJson(const HttpRequest& request, size_t loop);
  // Charges the rules whose cost `response` reports, and gives `decision` what is left. The
  // decision is changed in place, not returned: a returned one would take room in the proxy
  // handler's coroutine frame.
  Awaitable<void> ChargeReportedCosts(const Snapshot& snapshot, const Request& request,
                                      const HttpResponse& response, Decision& decision,
                                      size_t loop);
  // The answer to a proxied request the limiter did not allow, logged as such.
  HttpResponse RefuseProxied(const Snapshot& snapshot, const HttpRequest& request,
                             const Request& attributes, const Peer& peer, const Decision& decision,
                             double store_seconds) const;
  Awaitable<HttpResponse> CheckAuthRequest(const HttpRequest& request, const Peer& peer,
                                           size_t loop);

  // The attributes of an HTTP request, by the snapshot's configuration.
  static Request Attributes(const Snapshot& snapshot, const HttpRequest& request, const Peer& peer,
                            std::string_view method, std::string_view path);

  std::vector<std::shared_ptr<Store>> stores_;
  std::function<bool()> ready_;
  std::shared_ptr<QuotaStore> quota_store_;
  std::vector<std::unique_ptr<UpstreamPool>> upstreams_;
  mutable std::mutex mutex_;
  std::shared_ptr<const Snapshot> current_;
  std::function<std::vector<GaugeValue>()> gauges_;
  std::shared_ptr<AccessLog> access_log_;
  std::function<std::string()> more_metrics_;
  Metrics metrics_;
  std::shared_ptr<TopRejected> top_rejected_ = std::make_shared<TopRejected>();
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  mutable std::mutex history_mutex_;
  StatusHistory history_;
  ThrottledLog store_errors_;
  std::atomic<int64_t> log_second_{0};
  std::atomic<int> logged_this_second_{0};
};

// The decision as the check API's JSON answer.
std::string DecisionJson(const Decision& decision, const std::vector<Rule>& rules);

}  // namespace sluice::http
