#include "http/gateway.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "http/check_body.h"
#include "http/client_address.h"
#include "http/request_attributes.h"
#include "http/string_views.h"
#include "sluice/headers.h"
#include "sluice/local_counting_store.h"

namespace sluice::http {

namespace bhttp = beast::http;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

HttpResponse JsonResponse(bhttp::status status, const json& body) {
  return MakeResponse(status, body.dump() + "\n", "application/json");
}

HttpResponse JsonError(bhttp::status status, const std::string& message) {
  return JsonResponse(status, json{{"error", message}});
}

void AddHeaders(HttpResponse& response, const Decision& decision, const Snapshot& snapshot) {
  for (const auto& [name, value] :
       RateLimitHeaders(decision, snapshot.rules(), snapshot.config.headers)) {
    response.set(BeastView(name), value);
  }
}

std::optional<std::string_view> FindHeader(const HttpRequest& request, std::string_view name) {
  auto it = request.find(BeastView(name));
  if (it == request.end()) return std::nullopt;
  return StdView(it->value());
}

std::string_view PathOf(std::string_view target) { return target.substr(0, target.find('?')); }

// 429 for a rate limit; 503 when the store could not be asked and the policy is to fail closed.
bhttp::status RejectionStatus(const Decision& decision) {
  return decision.checked ? bhttp::status::too_many_requests : bhttp::status::service_unavailable;
}

// What a client is told of an error: its own bad input whole, a store's trouble only as that
// (the store's address and error text are for the log and metrics, never for clients).
std::string PublicError(const Status& error) {
  if (error.code() == StatusCode::kInvalidArgument) return error.ToString();
  return "rate limit store unavailable";
}

// The rejection's body: the rule that rejected and when to come back.
std::string RejectionBody(const Decision& decision, const std::vector<Rule>& rules) {
  if (!decision.checked) return json{{"error", PublicError(decision.error)}}.dump() + "\n";
  json body = {{"error", "too many requests"}, {"retry_after", decision.retry_after_s}};
  if (decision.rejecting) {
    const RuleVerdict& r = decision.verdicts[*decision.rejecting];
    body["rule"] = rules[r.rule].name;
    body["retry_ms"] = r.retry_ms;
  }
  return body.dump() + "\n";
}

// Whether the upstream answered: 502 and 504 are the gateway's own answers when it did not.
bool UpstreamAnswered(const HttpResponse& response) {
  return response.result() != bhttp::status::bad_gateway &&
         response.result() != bhttp::status::gateway_timeout;
}

// What the response says a rule's request cost: its cost_from_header as a whole number, else
// (missing or malformed) the rule's own cost.
int64_t ReportedCostOf(const Rule& rule, const HttpResponse& response) {
  auto it = response.find(BeastView(rule.cost_from_header));
  if (it == response.end()) return rule.cost;
  const std::string_view text = StdView(it->value());
  int64_t cost = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), cost);
  if (error != std::errc() || end != text.data() + text.size() || cost < 0 ||
      cost > Limit::kMaxCapacity) {
    return rule.cost;
  }
  return cost;
}

// The check's decision with the report's verdicts in place of its looks: the request was
// allowed, and its headers say what is left after the charge.
Decision WithReport(Decision check, const Decision& report) {
  for (const RuleVerdict& charged : report.verdicts) {
    for (RuleVerdict& looked : check.verdicts) {
      if (looked.rule != charged.rule) continue;
      looked.remaining = charged.remaining;
      looked.charged = true;
    }
  }
  Decision combined = CombineVerdicts(std::move(check.verdicts));
  combined.checked = check.checked;
  combined.error = std::move(check.error);
  return combined;
}

// The answer to a request the limiter did not allow: 400 for attributes that cannot be keys,
// else the rejection, with its rate limit headers.
HttpResponse Refusal(const Decision& decision, const Snapshot& snapshot, unsigned version) {
  if (decision.error.code() == StatusCode::kInvalidArgument) {
    return JsonError(bhttp::status::bad_request, decision.error.message());
  }
  HttpResponse response =
      MakeResponse(RejectionStatus(decision), RejectionBody(decision, snapshot.rules()),
                   "application/json", version);
  AddHeaders(response, decision, snapshot);
  return response;
}

}  // namespace

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
  if (!decision.error.ok()) out["error"] = PublicError(decision.error);
  if (decision.fell_back_to_refund) out["policy"] = "refund";  // all-or-nothing could not be
  return out.dump();
}

void Gateway::LogShadowRejections(const Decision& decision, const std::vector<Rule>& rules) {
  // At most a few lines a second: a flood of would-be rejections must not become a flood of logs.
  const int64_t second =
      std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count();
  if (log_second_.exchange(second) != second) logged_this_second_ = 0;
  if (++logged_this_second_ > 10) return;
  for (const RuleVerdict& v : decision.verdicts) {
    if (v.shadow && !v.allowed) {
      spdlog::info("shadow rule {} would have rejected (retry in {} ms)", rules[v.rule].name,
                   v.retry_ms);
    }
  }
}

Gateway::Gateway(std::vector<std::shared_ptr<Store>> stores, std::function<bool()> ready)
    : stores_(std::move(stores)), ready_(std::move(ready)) {}

Status Gateway::Apply(config::Config config) {
  std::vector<std::unique_ptr<Limiter>> limiters;
  const LimiterOptions options = config::LimiterOptionsOf(config);  // one cache for all loops
  // Rules that count locally share one set of local counts and leases per process, kept as
  // long as this configuration is; each loop's checks reach the store through its own
  // connection, syncs and returns through the first loop's.
  std::shared_ptr<LocalCountingStore> local_counts;
  if (std::any_of(config.rules.begin(), config.rules.end(),
                  [](const Rule& r) { return r.counting.mode != Counting::kShared; })) {
    local_counts = std::make_shared<LocalCountingStore>(stores_.front());
  }
  for (const std::shared_ptr<Store>& store : stores_) {
    Result<std::unique_ptr<Limiter>> limiter = Limiter::Create(
        config.rules, options,
        local_counts ? std::static_pointer_cast<Store>(local_counts->Through(store)) : store);
    if (!limiter.ok()) return limiter.status();
    limiters.push_back(std::move(limiter).value());
  }
  std::vector<RuleCounters*> counters;
  for (const Rule& rule : limiters.front()->rules())
    counters.push_back(metrics_.ForRule(rule.name));
  std::string upstream_authority = config.upstream.address.ToString();
  const bool reports_costs = std::any_of(config.rules.begin(), config.rules.end(),
                                         [](const Rule& r) { return r.CostReported(); });
  auto snapshot = std::make_shared<Snapshot>(
      Snapshot{std::move(config), std::move(limiters), std::move(counters), local_counts,
               reports_costs, std::move(upstream_authority)});
  std::shared_ptr<const Snapshot> old;  // goes after the lock, with the last check using it
  std::lock_guard lock(mutex_);
  old = std::exchange(current_, std::move(snapshot));
  return {};
}

void Gateway::FlushLocalCounts(std::function<void()> done) const {
  const std::shared_ptr<LocalCountingStore> local = Current()->local_counts;
  if (local == nullptr) return done();
  local->Flush(std::move(done));
}

std::shared_ptr<const Snapshot> Gateway::Current() const {
  std::lock_guard lock(mutex_);
  return current_;
}

void Gateway::SetGauges(std::function<std::vector<std::pair<std::string, double>>()> gauges) {
  gauges_ = std::move(gauges);
}

void Gateway::SetMoreMetrics(std::function<std::string()> text) { more_metrics_ = std::move(text); }

Awaitable<Decision> Gateway::Decide(const Snapshot& snapshot, const Request& request, size_t loop) {
  const auto start = Clock::now();
  Decision decision = co_await snapshot.limiters[loop]->AsyncCheck(request, kUseAwaitable);
  metrics_.RecordDecision(decision, snapshot.rule_counters,
                          std::chrono::duration<double>(Clock::now() - start).count());
  if (decision.shadow_rejections > 0) LogShadowRejections(decision, snapshot.rules());
  if (!decision.checked && decision.error.code() != StatusCode::kInvalidArgument) {
    store_errors_.Warn("rate limit store unavailable, the failure policy decides",
                       decision.error.ToString());
  }
  co_return decision;
}

Awaitable<HttpResponse> Gateway::HandleCheck(HttpRequest request, const Peer& peer, size_t loop) {
  const std::string_view target = StdView(request.target());
  if (target == "/v1/check") {
    if (request.method() != bhttp::verb::post) {
      co_return JsonError(bhttp::status::method_not_allowed, "use POST");
    }
    co_return co_await CheckJson(request, loop);
  }
  if (target == "/v1/report") {
    if (request.method() != bhttp::verb::post) {
      co_return JsonError(bhttp::status::method_not_allowed, "use POST");
    }
    co_return co_await ReportJson(request, loop);
  }
  if (target == "/v1/auth" || target.starts_with("/v1/auth?")) {
    co_return co_await CheckAuthRequest(request, peer, loop);
  }
  co_return JsonError(bhttp::status::not_found,
                      "no such endpoint; try POST /v1/check or POST /v1/report");
}

Awaitable<HttpResponse> Gateway::CheckJson(const HttpRequest& request, size_t loop) {
  std::shared_ptr<const Snapshot> snapshot = Current();
  Result<Request> parsed = ParseCheckBody(request.body());
  if (!parsed.ok()) co_return JsonError(bhttp::status::bad_request, parsed.status().message());
  Decision decision = co_await Decide(*snapshot, *parsed, loop);
  if (decision.error.code() == StatusCode::kInvalidArgument) {
    co_return JsonError(bhttp::status::bad_request, decision.error.message());
  }
  HttpResponse response =
      MakeResponse(decision.allowed ? bhttp::status::ok : RejectionStatus(decision),
                   DecisionJson(decision, snapshot->rules()) + "\n", "application/json");
  AddHeaders(response, decision, *snapshot);
  co_return response;
}

Awaitable<HttpResponse> Gateway::ReportJson(const HttpRequest& request, size_t loop) {
  std::shared_ptr<const Snapshot> snapshot = Current();
  Result<Request> parsed = ParseCheckBody(request.body());
  if (!parsed.ok()) co_return JsonError(bhttp::status::bad_request, parsed.status().message());
  if (!parsed->cost()) co_return JsonError(bhttp::status::bad_request, "the body needs \"cost\"");
  const int64_t cost = *parsed->cost();
  const Decision decision = co_await snapshot->limiters[loop]->AsyncReport(
      *parsed, [cost](const Rule&) { return std::optional<int64_t>(cost); }, kUseAwaitable);
  if (decision.error.code() == StatusCode::kInvalidArgument) {
    co_return JsonError(bhttp::status::bad_request, decision.error.message());
  }
  if (!decision.checked) {
    store_errors_.Warn("rate limit store unavailable, a reported cost is lost",
                       decision.error.ToString());
  }
  // Never refused for being over: the report is taken, and the decision says what is left.
  HttpResponse response =
      MakeResponse(decision.checked ? bhttp::status::ok : bhttp::status::service_unavailable,
                   DecisionJson(decision, snapshot->rules()) + "\n", "application/json");
  co_return response;
}

Awaitable<Decision> Gateway::ChargeReportedCosts(const Snapshot& snapshot, const Request& request,
                                                 const HttpResponse& response, Decision decision,
                                                 size_t loop) {
  Decision report = co_await snapshot.limiters[loop]->AsyncReport(
      request,
      [&response](const Rule& rule) -> std::optional<int64_t> {
        if (!rule.CostReported()) return std::nullopt;
        return ReportedCostOf(rule, response);
      },
      kUseAwaitable);
  if (!report.checked) {
    store_errors_.Warn("rate limit store unavailable, a reported cost is lost",
                       report.error.ToString());
    co_return decision;
  }
  co_return WithReport(std::move(decision), report);
}

Request Gateway::Attributes(const Snapshot& snapshot, const HttpRequest& request, const Peer& peer,
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

Awaitable<HttpResponse> Gateway::HandleProxy(HttpRequest request, const Peer& peer, size_t loop) {
  // What does not wait is done in plain functions: all a coroutine's locals live in its frame,
  // and a frame over 1 KiB costs malloc much more than a smaller one.
  std::shared_ptr<const Snapshot> snapshot = Current();
  const Request attributes = Attributes(*snapshot, request, peer, StdView(request.method_string()),
                                        PathOf(StdView(request.target())));
  Decision decision = co_await Decide(*snapshot, attributes, loop);
  if (!decision.allowed || decision.error.code() == StatusCode::kInvalidArgument) {
    co_return Refusal(decision, *snapshot, request.version());
  }
  const unsigned version = request.version();
  const bool head = request.method() == bhttp::verb::head;
  PrepareUpstreamRequest(request, peer, snapshot->upstream_authority);
  const auto start = Clock::now();
  HttpResponse response = co_await upstreams_[loop]->Forward(std::move(request));
  metrics_.RecordUpstream(UpstreamAnswered(response),
                          std::chrono::duration<double>(Clock::now() - start).count());
  // Charged before the response is relayed, so that its headers say what is left after it; a
  // failed upstream (no answer, or a server error) costs nothing.
  if (snapshot->reports_costs && decision.checked && response.result_int() < 500) {
    decision =
        co_await ChargeReportedCosts(*snapshot, attributes, response, std::move(decision), loop);
  }
  PrepareClientResponse(response, head);
  response.version(version);
  AddHeaders(response, decision, *snapshot);
  co_return response;
}

// nginx's auth_request: the original request's headers come along; its method and URI in
// X-Original-Method and X-Original-URI, as the example configuration sets them.
Awaitable<HttpResponse> Gateway::CheckAuthRequest(const HttpRequest& request, const Peer& peer,
                                                  size_t loop) {
  std::shared_ptr<const Snapshot> snapshot = Current();
  const std::string_view uri = FindHeader(request, "X-Original-URI").value_or("");
  Request attributes = Attributes(
      *snapshot, request, peer, FindHeader(request, "X-Original-Method").value_or(""), PathOf(uri));
  Decision decision = co_await Decide(*snapshot, attributes, loop);
  if (decision.error.code() == StatusCode::kInvalidArgument) {
    co_return MakeResponse(bhttp::status::bad_request, decision.error.message() + "\n");
  }
  // nginx denies only on 401 and 403; "?deny=403" asks for that instead of 429.
  const std::string_view target = StdView(request.target());
  const bool deny_403 = target.find("deny=403") != std::string_view::npos;
  bhttp::status status = bhttp::status::ok;
  if (!decision.allowed) {
    status = deny_403 && decision.checked ? bhttp::status::forbidden : RejectionStatus(decision);
  }
  HttpResponse response = MakeResponse(status, "");
  AddHeaders(response, decision, *snapshot);
  co_return response;
}

std::string Gateway::MetricsText() const {
  std::string text =
      metrics_.Render(gauges_ ? gauges_() : std::vector<std::pair<std::string, double>>{});
  if (const auto& local = Current()->local_counts) {
    text += Metrics::RenderLocalCounting(local->Stats());
  }
  if (more_metrics_) text += more_metrics_();
  return text;
}

Awaitable<HttpResponse> Gateway::HandleAdmin(HttpRequest request, const Peer& /*peer*/,
                                             size_t /*loop*/) {
  const std::string_view target = StdView(request.target());
  if (target == "/healthz") co_return MakeResponse(bhttp::status::ok, "ok\n");
  if (target == "/readyz") {
    const bool ready = ready_();
    co_return MakeResponse(ready ? bhttp::status::ok : bhttp::status::service_unavailable,
                           ready ? "ready\n" : "store unreachable\n");
  }
  if (target == "/metrics") {
    co_return MakeResponse(bhttp::status::ok, MetricsText(), "text/plain; version=0.0.4");
  }
  co_return MakeResponse(bhttp::status::not_found, "try /healthz, /readyz or /metrics\n");
}

}  // namespace sluice::http
