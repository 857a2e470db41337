#include "http/gateway_core.h"

#include <spdlog/spdlog.h>

#include <cassert>
#include <chrono>
#include <nlohmann/json.hpp>

#include "http/request_attributes.h"
#include "http/string_views.h"
#include "http/upstream.h"
#include "sluice/async_callback.h"
#include "sluice/headers.h"

namespace sluice::http {

namespace bhttp = beast::http;
using json = nlohmann::json;

namespace {

// What the access log says of a decision.
std::string_view DecisionName(const Decision& decision) {
  if (decision.error.code() == StatusCode::kInvalidArgument) return "invalid";
  if (!decision.checked) return decision.allowed ? "failure_allowed" : "failure_rejected";
  return decision.allowed ? "allowed" : "rejected";
}

// Counts the values of the enforced rules that rejected `request`.
void RecordRejectedValues(const Snapshot& snapshot, const Request& request,
                          const Decision& decision, int64_t now_ms) {
  for (const RuleVerdict& v : decision.verdicts) {
    if (v.allowed || v.shadow) continue;
    const std::string* value = request.Find(snapshot.rules()[v.rule].attribute);
    if (value != nullptr) snapshot.rejected_values[v.rule]->Record(*value, now_ms);
  }
}

}  // namespace

HttpResponse JsonError(bhttp::status status, const std::string& message) {
  return MakeResponse(status, json{{"error", message}}.dump() + "\n", "application/json");
}

void AddRateLimitHeaders(HttpResponse& response, const Decision& decision,
                         const Snapshot& snapshot) {
  for (const auto& [name, value] :
       RateLimitHeaders(decision, snapshot.rules(), snapshot.config.headers)) {
    response.set(BeastView(name), value);
  }
}

bhttp::status RejectionStatus(const Decision& decision) {
  return decision.checked ? bhttp::status::too_many_requests : bhttp::status::service_unavailable;
}

std::string PublicError(const Decision& decision) {
  if (decision.error.code() == StatusCode::kInvalidArgument) return decision.error.ToString();
  return decision.quota_failed ? "quota store unavailable" : "rate limit store unavailable";
}

std::optional<std::string_view> FindHeader(const HttpRequest& request, std::string_view name) {
  auto it = request.find(BeastView(name));
  if (it == request.end()) return std::nullopt;
  return StdView(it->value());
}

std::string_view PathOf(std::string_view target) { return target.substr(0, target.find('?')); }

std::string_view ClientOf(const Request& attributes, const Peer& peer) {
  const std::string* ip = attributes.Find("ip");
  return ip != nullptr ? std::string_view(*ip) : std::string_view(peer.text);
}

Request AttributesOf(const Snapshot& snapshot, const HttpRequest& request, const Peer& peer,
                     std::string_view method, std::string_view path) {
  const config::Config& config = snapshot.config;
  const std::string ip = ClientAddress(
      peer,
      JoinedHeader(request, config.client.forwarding_header == config::ForwardingHeader::kForwarded
                                ? "Forwarded"
                                : "X-Forwarded-For"),
      config.client.forwarding_header, config.client.trusted_proxies);
  return RequestAttributes(config, ip, method, path,
                           [&request](std::string_view name) { return FindHeader(request, name); });
}

std::string DecisionJson(const Decision& decision, const std::vector<Rule>& rules) {
  json verdicts = json::array();
  for (const RuleVerdict& v : decision.verdicts) {
    verdicts.push_back({{"rule", rules[v.rule].name},
                        {"allowed", v.allowed},
                        {"remaining", v.remaining},
                        {"retry_ms", v.retry_ms},
                        {"limit", v.limit.capacity},
                        {"shadow", v.shadow}});
  }
  json out = {{"allowed", decision.allowed},
              {"checked", decision.checked},
              {"retry_after", decision.retry_after_s},
              {"rules", verdicts}};
  if (decision.tightest) out["tightest"] = rules[decision.verdicts[*decision.tightest].rule].name;
  if (decision.rejecting) {
    const RuleVerdict& r = decision.verdicts[*decision.rejecting];
    out["rejected_by"] = rules[r.rule].name;
    out["retry_ms"] = r.retry_ms;
  }
  if (!decision.error.ok()) out["error"] = PublicError(decision);
  if (decision.fell_back_to_refund) out["policy"] = "refund";  // all-or-nothing could not be
  return out.dump();
}

GatewayCore::GatewayCore(std::vector<std::shared_ptr<Store>> stores, std::function<bool()> ready,
                         std::shared_ptr<QuotaStore> quota_store,
                         std::shared_ptr<const Clock> clock)
    : clock_(ClockOrSteady(std::move(clock))),
      ready_(std::move(ready)),
      config_(std::move(stores), std::move(quota_store), metrics_, *top_rejected_),
      store_errors_(std::chrono::seconds(1), clock_) {}

std::optional<std::string> GatewayCore::Unready() const {
  if (!ready_()) return "store unreachable";
  if (config_.quota_store() && !config_.quota_store()->Ready()) return "quota store unreachable";
  return std::nullopt;
}

void GatewayCore::LogShadowRejections(const Decision& decision, const std::vector<Rule>& rules) {
  // At most a few lines a second: a flood of would-be rejections must not become a flood of logs.
  const int64_t second =
      std::chrono::duration_cast<std::chrono::seconds>(clock_->Now().time_since_epoch()).count();
  if (log_second_.exchange(second) != second) logged_this_second_ = 0;
  if (++logged_this_second_ > 10) return;
  for (const RuleVerdict& v : decision.verdicts) {
    if (v.shadow && !v.allowed) {
      spdlog::info("shadow rule {} would have rejected (retry in {} ms)", rules[v.rule].name,
                   v.retry_ms);
    }
  }
}

void GatewayCore::LogAccess(std::string_view client, std::string_view method, std::string_view path,
                            unsigned status, const Decision& decision,
                            const std::vector<Rule>& rules, double store_seconds) const {
  if (!access_log_) return;
  AccessEntry entry;
  entry.time =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  entry.client = client;
  entry.method = method;
  entry.path = path;
  entry.status = status;
  entry.decision = DecisionName(decision);
  if (decision.rejecting) entry.rule = rules[decision.verdicts[*decision.rejecting].rule].name;
  entry.store_seconds = store_seconds;
  access_log_->Write(entry);
}

void GatewayCore::WarnLostReport(const Status& error) {
  store_errors_.Warn("rate limit store unavailable, a reported cost is lost", error.ToString());
}

Awaitable<Decision> GatewayCore::Decide(const Snapshot& snapshot, const Request& request,
                                        size_t loop, double* seconds) {
  assert(loop < snapshot.limiters.size() && "a limiter for each event loop");
  const Clock::TimePoint start = clock_->Now();
  const Limiter& limiter = *snapshot.limiters[loop];
  // Not AsyncCheck, which copies the request for an awaitable awaited later: this one starts
  // here, while `request` is alive, and Check keeps no reference to it.
  Decision decision = co_await AsyncFromCallback<Decision>(
      [&limiter, &request](DecisionCallback done) { limiter.Check(request, std::move(done)); },
      kUseAwaitable);
  const double took = std::chrono::duration<double>(clock_->Now() - start).count();
  if (seconds != nullptr) *seconds = took;
  const std::vector<Rule>& rules = snapshot.rules();
  metrics_.RecordDecision(
      decision, snapshot.rule_counters,
      [&](size_t rule) { return request.cost().value_or(rules[rule].cost); },
      snapshot.config.near_limit_ratio, took);
  if (decision.shadow_rejections > 0) LogShadowRejections(decision, snapshot.rules());
  if (!decision.allowed && decision.checked)
    RecordRejectedValues(snapshot, request, decision, clock_->NowMs());
  if (decision.quota_failed) {
    store_errors_.Warn("quota store unavailable, quota_store.failure decides",
                       decision.error.ToString());
  } else if (!decision.checked && decision.error.code() != StatusCode::kInvalidArgument) {
    store_errors_.Warn("rate limit store unavailable, the failure policy decides",
                       decision.error.ToString());
  }
  co_return decision;
}

}  // namespace sluice::http
