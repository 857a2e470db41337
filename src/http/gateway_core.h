// What the gateway's handlers share: the configuration in force, the metrics, the access log,
// and the one path every request is decided by (checked, counted, its rejections recorded and
// its store's troubles logged), with the pieces of an answer that every front end gives alike.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/access_log.h"
#include "http/client_address.h"
#include "http/gateway_config.h"
#include "http/metrics.h"
#include "http/rejected_values.h"
#include "http/server.h"
#include "http/throttled_log.h"
#include "sluice/clock.h"
#include "sluice/decision.h"
#include "sluice/request.h"

namespace sluice::http {

class GatewayCore {
 public:
  // See Gateway's constructor.
  GatewayCore(std::vector<std::shared_ptr<Store>> stores, std::function<bool()> ready,
              std::shared_ptr<QuotaStore> quota_store, std::shared_ptr<const Clock> clock);

  // The clock of everything the gateway times; safe from any thread.
  const std::shared_ptr<const Clock>& clock() const { return clock_; }

  GatewayConfig& config() { return config_; }
  const GatewayConfig& config() const { return config_; }
  Metrics& metrics() { return metrics_; }
  const Metrics& metrics() const { return metrics_; }
  const std::shared_ptr<TopRejected>& top_rejected() const { return top_rejected_; }
  const std::shared_ptr<AccessLog>& access_log() const { return access_log_; }

  // Where a line per proxied or checked request goes; null (the default): nowhere. Set before
  // the servers start.
  void SetAccessLog(std::shared_ptr<AccessLog> log) { access_log_ = std::move(log); }

  // Checks `request` with the snapshot's limiter of event loop `loop` and records it in the
  // metrics; `seconds`, when given, gets how long the check took.
  Awaitable<Decision> Decide(const Snapshot& snapshot, const Request& request, size_t loop,
                             double* seconds = nullptr);

  // Logs, at most once a second for each message, that a cost reported after the fact was lost.
  void WarnLostReport(const Status& error);

  // Why the gateway is not ready ("store unreachable", "quota store unreachable"); none when it
  // is.
  std::optional<std::string> Unready() const;

  // The access log's line for a request answered `status`, when there is an access log.
  void LogAccess(std::string_view client, std::string_view method, std::string_view path,
                 unsigned status, const Decision& decision, const std::vector<Rule>& rules,
                 double store_seconds) const;

 private:
  void LogShadowRejections(const Decision& decision, const std::vector<Rule>& rules);

  const std::shared_ptr<const Clock> clock_;
  std::function<bool()> ready_;
  Metrics metrics_;
  std::shared_ptr<TopRejected> top_rejected_ = std::make_shared<TopRejected>();
  GatewayConfig config_;  // after the metrics and top_rejected_, which its snapshots point into
  std::shared_ptr<AccessLog> access_log_;
  ThrottledLog store_errors_;
  std::atomic<int64_t> log_second_{0};
  std::atomic<int> logged_this_second_{0};
};

// The decision as the check API's JSON answer.
std::string DecisionJson(const Decision& decision, const std::vector<Rule>& rules);

// The JSON answer {"error": message}.
HttpResponse JsonError(beast::http::status status, const std::string& message);

// The rate limit headers of `decision` by the snapshot's configuration.
void AddRateLimitHeaders(HttpResponse& response, const Decision& decision,
                         const Snapshot& snapshot);

// 429 for a rate limit; 503 when the store could not be asked and the policy is to fail closed.
beast::http::status RejectionStatus(const Decision& decision);

// What a client is told of a decision's error: its own bad input whole, a store's trouble only
// as that (the store's address and error text are for the log and metrics, never for clients).
std::string PublicError(const Decision& decision);

// A request's header `name`, when it has one.
std::optional<std::string_view> FindHeader(const HttpRequest& request, std::string_view name);

// A target's path: without its query string.
std::string_view PathOf(std::string_view target);

// The client as the access log names it: the address the rules count (forwarding headers of
// trusted proxies read), else the connection's peer.
std::string_view ClientOf(const Request& attributes, const Peer& peer);

// The attributes of an HTTP request made with `method` to `path`, by the snapshot's
// configuration.
Request AttributesOf(const Snapshot& snapshot, const HttpRequest& request, const Peer& peer,
                     std::string_view method, std::string_view path);

}  // namespace sluice::http
