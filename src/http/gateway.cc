#include "http/gateway.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <nlohmann/json.hpp>

#include "http/check_body.h"
#include "http/client_address.h"
#include "http/request_attributes.h"
#include "http/status.h"
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

// Whether `query` ("" or "?..." after a path) is one a URL may carry: every '%' followed by two
// hex digits, no control characters.
bool WellFormedQuery(std::string_view query) {
  for (size_t i = 0; i < query.size(); ++i) {
    const auto c = static_cast<unsigned char>(query[i]);
    if (c < 0x20 || c == 0x7f) return false;
    if (c == '%' &&
        (i + 2 >= query.size() || !std::isxdigit(static_cast<unsigned char>(query[i + 1])) ||
         !std::isxdigit(static_cast<unsigned char>(query[i + 2])))) {
      return false;
    }
  }
  return true;
}

// 429 for a rate limit; 503 when the store could not be asked and the policy is to fail closed.
bhttp::status RejectionStatus(const Decision& decision) {
  return decision.checked ? bhttp::status::too_many_requests : bhttp::status::service_unavailable;
}

// What a client is told of a decision's error: its own bad input whole, a store's trouble only as
// that (the store's address and error text are for the log and metrics, never for clients).
std::string PublicError(const Decision& decision) {
  if (decision.error.code() == StatusCode::kInvalidArgument) return decision.error.ToString();
  return decision.quota_failed ? "quota store unavailable" : "rate limit store unavailable";
}

// The rejection's body: the rule that rejected and when to come back.
std::string RejectionBody(const Decision& decision, const std::vector<Rule>& rules) {
  if (!decision.checked) return json{{"error", PublicError(decision)}}.dump() + "\n";
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

// The client as the access log names it: the address the rules count (forwarding headers of
// trusted proxies read), else the connection's peer.
std::string_view ClientOf(const Request& attributes, const Peer& peer) {
  const std::string* ip = attributes.Find("ip");
  return ip != nullptr ? std::string_view(*ip) : std::string_view(peer.text);
}

// What the access log says of a decision.
std::string_view DecisionName(const Decision& decision) {
  if (decision.error.code() == StatusCode::kInvalidArgument) return "invalid";
  if (!decision.checked) return decision.allowed ? "failure_allowed" : "failure_rejected";
  return decision.allowed ? "allowed" : "rejected";
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
  if (!decision.error.ok()) out["error"] = PublicError(decision);
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

void Gateway::LogAccess(std::string_view client, std::string_view method, std::string_view path,
                        unsigned status, const Decision& decision, const std::vector<Rule>& rules,
                        double store_seconds) const {
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

Gateway::Gateway(std::vector<std::shared_ptr<Store>> stores, std::function<bool()> ready,
                 std::shared_ptr<QuotaStore> quota_store)
    : stores_(std::move(stores)), ready_(std::move(ready)), quota_store_(std::move(quota_store)) {}

std::optional<std::string> Gateway::Unready() const {
  if (!ready_()) return "store unreachable";
  if (quota_store_ && !quota_store_->Ready()) return "quota store unreachable";
  return std::nullopt;
}

Status Gateway::Apply(config::Config config) {
  std::vector<std::unique_ptr<Limiter>> limiters;
  LimiterOptions options = config::LimiterOptionsOf(config);  // one cache for all loops
  options.quota_store = quota_store_;
  // Rules that count locally share one set of local counts and leases per process, kept as
  // long as this configuration is; each loop's checks reach the store through its own
  // connection, syncs and returns through the first loop's.
  std::shared_ptr<LocalCountingStore> local_counts;
  if (std::any_of(config.rules.begin(), config.rules.end(),
                  [](const Rule& r) { return r.CountsLocally(); })) {
    local_counts =
        std::make_shared<LocalCountingStore>(stores_.front(), nullptr,
                                             /*background=*/true, config.store.max_buckets);
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
  top_rejected_->Resize(config.debug_top.size);
  std::vector<RejectedValues*> rejected_values;
  for (const Rule& rule : limiters.front()->rules())
    rejected_values.push_back(top_rejected_->ForRule(rule.name));
  auto snapshot = std::make_shared<Snapshot>(
      Snapshot{std::move(config), std::move(limiters), std::move(counters), local_counts,
               reports_costs, std::move(upstream_authority), std::move(rejected_values)});
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

void Gateway::SetGauges(std::function<std::vector<GaugeValue>()> gauges) {
  gauges_ = std::move(gauges);
}

void Gateway::SetMoreMetrics(std::function<std::string()> text) { more_metrics_ = std::move(text); }

Awaitable<Decision> Gateway::Decide(const Snapshot& snapshot, const Request& request, size_t loop,
                                    double* seconds) {
  const auto start = Clock::now();
  const Limiter& limiter = *snapshot.limiters[loop];
  // Not AsyncCheck, which copies the request for an awaitable awaited later: this one starts
  // here, while `request` is alive, and Check keeps no reference to it.
  Decision decision = co_await AsyncFromCallback<Decision>(
      [&limiter, &request](DecisionCallback done) { limiter.Check(request, std::move(done)); },
      kUseAwaitable);
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  if (seconds != nullptr) *seconds = took;
  const std::vector<Rule>& rules = snapshot.rules();
  metrics_.RecordDecision(
      decision, snapshot.rule_counters,
      [&](size_t rule) { return request.cost().value_or(rules[rule].cost); },
      snapshot.config.near_limit_ratio, took);
  if (decision.shadow_rejections > 0) LogShadowRejections(decision, snapshot.rules());
  if (!decision.allowed && decision.checked) RecordRejectedValues(snapshot, request, decision);
  if (decision.quota_failed) {
    store_errors_.Warn("quota store unavailable, quota_store.failure decides",
                       decision.error.ToString());
  } else if (!decision.checked && decision.error.code() != StatusCode::kInvalidArgument) {
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
  double store_seconds = 0;
  Decision decision = co_await Decide(*snapshot, *parsed, loop, &store_seconds);
  if (decision.error.code() == StatusCode::kInvalidArgument) {
    co_return JsonError(bhttp::status::bad_request, decision.error.message());
  }
  HttpResponse response =
      MakeResponse(decision.allowed ? bhttp::status::ok : RejectionStatus(decision),
                   DecisionJson(decision, snapshot->rules()) + "\n", "application/json");
  AddHeaders(response, decision, *snapshot);
  if (access_log_) {
    const std::string* ip = parsed->Find("ip");
    LogAccess(ip != nullptr ? std::string_view(*ip) : "-", parsed->method(), parsed->path(),
              response.result_int(), decision, snapshot->rules(), store_seconds);
  }
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

Awaitable<void> Gateway::ChargeReportedCosts(const Snapshot& snapshot, const Request& request,
                                             const HttpResponse& response, Decision& decision,
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
    co_return;
  }
  decision = WithReport(std::move(decision), report);
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

HttpResponse Gateway::RefuseProxied(const Snapshot& snapshot, const HttpRequest& request,
                                    const Request& attributes, const Peer& peer,
                                    const Decision& decision, double store_seconds) const {
  HttpResponse refusal = Refusal(decision, snapshot, request.version());
  if (access_log_) {
    LogAccess(ClientOf(attributes, peer), StdView(request.method_string()),
              PathOf(StdView(request.target())), refusal.result_int(), decision, snapshot.rules(),
              store_seconds);
  }
  return refusal;
}

Awaitable<HttpResponse> Gateway::HandleProxy(HttpRequest request, const Peer& peer, size_t loop) {
  // What does not wait is done in plain functions: all a coroutine's locals live in its frame,
  // and a frame over 1 KiB costs malloc much more than a smaller one.
  std::shared_ptr<const Snapshot> snapshot = Current();
  const Request attributes = Attributes(*snapshot, request, peer, StdView(request.method_string()),
                                        PathOf(StdView(request.target())));
  double store_seconds = 0;
  Decision decision = co_await Decide(*snapshot, attributes, loop, &store_seconds);
  if (!decision.allowed || decision.error.code() == StatusCode::kInvalidArgument) {
    co_return RefuseProxied(*snapshot, request, attributes, peer, decision, store_seconds);
  }
  const unsigned version = request.version();
  PrepareUpstreamRequest(request, peer, snapshot->upstream_authority);
  const auto start = Clock::now();
  HttpResponse response = co_await upstreams_[loop]->Forward(request);
  metrics_.RecordUpstream(UpstreamAnswered(response),
                          std::chrono::duration<double>(Clock::now() - start).count());
  // Charged before the response is relayed, so that its headers say what is left after it; a
  // failed upstream (no answer, or a server error) costs nothing.
  if (snapshot->reports_costs && decision.checked && response.result_int() < 500) {
    co_await ChargeReportedCosts(*snapshot, attributes, response, decision, loop);
  }
  PrepareClientResponse(response, request.method() == bhttp::verb::head);
  response.version(version);
  AddHeaders(response, decision, *snapshot);
  if (access_log_) {
    LogAccess(ClientOf(attributes, peer), StdView(request.method_string()),
              PathOf(StdView(request.target())), response.result_int(), decision, snapshot->rules(),
              store_seconds);
  }
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
  double store_seconds = 0;
  Decision decision = co_await Decide(*snapshot, attributes, loop, &store_seconds);
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
  if (access_log_) {
    LogAccess(ClientOf(attributes, peer), FindHeader(request, "X-Original-Method").value_or(""),
              PathOf(uri), response.result_int(), decision, snapshot->rules(), store_seconds);
  }
  co_return response;
}

std::string Gateway::MetricsText() const {
  std::vector<StoreNodeStatus> nodes;
  for (size_t i = 0; i < stores_.size(); ++i) {
    if (i > 0 && stores_[i] == stores_[i - 1]) continue;  // one store shared by every loop
    for (StoreNodeStatus& node : stores_[i]->Nodes()) nodes.push_back(std::move(node));
  }
  if (quota_store_) {
    for (StoreNodeStatus& node : quota_store_->Nodes()) nodes.push_back(std::move(node));
  }
  std::string text = metrics_.Render(gauges_ ? gauges_() : std::vector<GaugeValue>{}, nodes);
  if (const auto& local = Current()->local_counts) {
    text += Metrics::RenderLocalCounting(local->Stats());
  }
  if (access_log_) {
    RenderFamily(text, "sluice_access_log_dropped_lines_total",
                 "Access log lines dropped because the writer's queue was full.",
                 {{"", access_log_->Dropped()}});
    RenderFamily(text, "sluice_access_log_write_errors_total",
                 "Failed writes to the access log file.", {{"", access_log_->WriteErrors()}});
  }
  if (more_metrics_) text += more_metrics_();
  return text;
}

Awaitable<HttpResponse> Gateway::HandleAdmin(HttpRequest request, const Peer& /*peer*/,
                                             size_t /*loop*/) {
  const std::string_view target = PathOf(StdView(request.target()));
  if (!WellFormedQuery(StdView(request.target()).substr(target.size()))) {
    co_return JsonError(bhttp::status::bad_request, "malformed query string");
  }
  if (target == "/healthz") co_return MakeResponse(bhttp::status::ok, "ok\n");
  if (target == "/readyz") {
    const std::optional<std::string> unready = Unready();
    co_return MakeResponse(unready ? bhttp::status::service_unavailable : bhttp::status::ok,
                           unready.value_or("ready") + "\n");
  }
  if (target == "/metrics") {
    co_return MakeResponse(bhttp::status::ok, MetricsText(), "text/plain; version=0.0.4");
  }
  if (std::optional<HttpResponse> status = StatusRoute(request)) co_return std::move(*status);
  co_return MakeResponse(bhttp::status::not_found, "try /healthz, /readyz or /metrics\n");
}

namespace {

// The clock rejected values are recorded and read on.
int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
      .count();
}

}  // namespace

void Gateway::RecordRejectedValues(const Snapshot& snapshot, const Request& request,
                                   const Decision& decision) {
  const int64_t now_ms = SteadyMs();
  for (const RuleVerdict& v : decision.verdicts) {
    if (v.allowed || v.shadow) continue;
    const std::string* value = request.Find(snapshot.rules()[v.rule].attribute);
    if (value != nullptr) snapshot.rejected_values[v.rule]->Record(*value, now_ms);
  }
}

void Gateway::SampleStatus() {
  const std::shared_ptr<const Snapshot> snapshot = Current();
  CounterSample sample;
  sample.second = SteadyMs() / 1000;
  for (size_t i = 0; i < snapshot->rule_counters.size(); ++i) {
    const RuleCounters& counters = *snapshot->rule_counters[i];
    sample.rules.emplace_back(snapshot->rules()[i].name,
                              RuleCounts{counters.allowed.load(std::memory_order_relaxed),
                                         counters.rejected.load(std::memory_order_relaxed)});
  }
  sample.store_errors = metrics_.StoreErrors();
  sample.check_latency = metrics_.CheckLatency();
  std::lock_guard lock(history_mutex_);
  history_.Add(std::move(sample));
}

namespace {

HttpResponse QueryError(const Status& error) {
  // The message may quote the query, which need not be UTF-8.
  return MakeResponse(
      bhttp::status::bad_request,
      json{{"error", error.message()}}.dump(-1, ' ', false, json::error_handler_t::replace) + "\n",
      "application/json");
}

// Bounded: the query string of one admin request (the server bounds the whole head anyway).
constexpr size_t kMaxQueryBytes = 2048;

}  // namespace

std::optional<HttpResponse> Gateway::StatusRoute(const HttpRequest& request) const {
  const std::string_view target = StdView(request.target());
  const std::string_view path = PathOf(target);
  if (path != "/" && path != "/status.json" && path != "/debug/top") return std::nullopt;
  if (request.method() != bhttp::verb::get) {
    return JsonError(bhttp::status::method_not_allowed, "use GET");
  }
  const std::string_view query =
      path.size() < target.size() ? target.substr(path.size() + 1) : std::string_view();
  if (query.size() > kMaxQueryBytes) return QueryError(Status::InvalidArgument("query too long"));
  std::shared_ptr<const Snapshot> snapshot = Current();
  const config::Config& config = snapshot->config;
  StatusView view{&config,
                  {snapshot->rejected_values.begin(), snapshot->rejected_values.end()},
                  top_rejected_->Limits(),
                  SteadyMs()};
  if (path == "/") {
    auto params = ParseQuery(query, {});
    if (!params.ok()) return QueryError(params.status());
    HttpResponse page =
        MakeResponse(bhttp::status::ok, std::string(StatusPageHtml()), "text/html; charset=utf-8");
    page.set(bhttp::field::cache_control, "no-store");
    return page;
  }
  if (path == "/status.json") {
    auto params = ParseQuery(query, {"seconds"});
    if (!params.ok()) return QueryError(params.status());
    int64_t seconds = 180;
    if (auto it = params->find("seconds"); it != params->end()) {
      const auto [end, error] =
          std::from_chars(it->second.data(), it->second.data() + it->second.size(), seconds);
      if (error != std::errc() || end != it->second.data() + it->second.size() || seconds < 1 ||
          seconds > 180) {
        return QueryError(Status::InvalidArgument("seconds must be a whole number from 1 to 180"));
      }
    }
    const Health health{
        !Unready(),
        std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started_).count()};
    std::string body;
    {
      std::lock_guard lock(history_mutex_);
      body = StatusJson(view, history_, health, seconds);
    }
    HttpResponse response = MakeResponse(bhttp::status::ok, std::move(body), "application/json");
    response.set(bhttp::field::cache_control, "no-store");
    return response;
  }
  auto params = ParseQuery(query, {"name", "n"});
  if (!params.ok()) return QueryError(params.status());
  size_t n = config.debug_top.size;
  if (auto it = params->find("n"); it != params->end()) {
    const auto [end, error] =
        std::from_chars(it->second.data(), it->second.data() + it->second.size(), n);
    if (error != std::errc() || end != it->second.data() + it->second.size() || n < 1 || n > 1000) {
      return QueryError(Status::InvalidArgument("n must be a whole number from 1 to 1000"));
    }
  }
  std::optional<std::string_view> only;
  if (auto it = params->find("name"); it != params->end()) only = it->second;
  return MakeResponse(bhttp::status::ok, DebugTopJson(view, only, n), "application/json");
}

}  // namespace sluice::http
