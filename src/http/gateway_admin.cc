#include "http/gateway_admin.h"

#include <cctype>
#include <charconv>
#include <nlohmann/json.hpp>

#include "http/status.h"
#include "http/string_views.h"

namespace sluice::http {

namespace bhttp = beast::http;
using json = nlohmann::json;

namespace {

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

HttpResponse QueryError(const Status& error) {
  // The message may quote the query, which need not be UTF-8.
  return MakeResponse(
      bhttp::status::bad_request,
      json{{"error", error.message()}}.dump(-1, ' ', false, json::error_handler_t::replace) + "\n",
      "application/json");
}

// Bounded: the query string of one admin request (the server bounds the whole head anyway).
constexpr size_t kMaxQueryBytes = 2048;

// The whole number `text` when it is one from `low` to `high`.
template <typename Number>
std::optional<Number> NumberIn(std::string_view text, Number low, Number high) {
  Number number = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error != std::errc() || end != text.data() + text.size() || number < low || number > high) {
    return std::nullopt;
  }
  return number;
}

HttpResponse NoStore(HttpResponse response) {
  response.set(bhttp::field::cache_control, "no-store");
  return response;
}

}  // namespace

std::string AdminEndpoints::MetricsText() const {
  std::vector<StoreNodeStatus> nodes;
  const std::vector<std::shared_ptr<Store>>& stores = core_.config().stores();
  for (size_t i = 0; i < stores.size(); ++i) {
    if (i > 0 && stores[i] == stores[i - 1]) continue;  // one store shared by every loop
    for (StoreNodeStatus& node : stores[i]->Nodes()) nodes.push_back(std::move(node));
  }
  if (const std::shared_ptr<QuotaStore>& quota_store = core_.config().quota_store()) {
    for (StoreNodeStatus& node : quota_store->Nodes()) nodes.push_back(std::move(node));
  }
  std::string text = core_.metrics().Render(gauges_ ? gauges_() : std::vector<GaugeValue>{}, nodes);
  if (const auto& local = core_.config().Current()->local_counts) {
    text += Metrics::RenderLocalCounting(local->Stats());
  }
  if (const std::shared_ptr<AccessLog>& access_log = core_.access_log()) {
    RenderFamily(text, "sluice_access_log_dropped_lines_total",
                 "Access log lines dropped because the writer's queue was full.",
                 {{"", access_log->Dropped()}});
    RenderFamily(text, "sluice_access_log_write_errors_total",
                 "Failed writes to the access log file.", {{"", access_log->WriteErrors()}});
  }
  if (more_metrics_) text += more_metrics_();
  return text;
}

Awaitable<HttpResponse> AdminEndpoints::Handle(HttpRequest request, const Peer& /*peer*/,
                                               size_t /*loop*/) {
  const std::string_view target = PathOf(StdView(request.target()));
  if (!WellFormedQuery(StdView(request.target()).substr(target.size()))) {
    co_return JsonError(bhttp::status::bad_request, "malformed query string");
  }
  if (target == "/healthz") co_return MakeResponse(bhttp::status::ok, "ok\n");
  if (target == "/readyz") {
    const std::optional<std::string> unready = core_.Unready();
    co_return MakeResponse(unready ? bhttp::status::service_unavailable : bhttp::status::ok,
                           unready.value_or("ready") + "\n");
  }
  if (target == "/metrics") {
    co_return MakeResponse(bhttp::status::ok, MetricsText(), "text/plain; version=0.0.4");
  }
  if (std::optional<HttpResponse> status = StatusRoute(request)) co_return std::move(*status);
  co_return MakeResponse(bhttp::status::not_found, "try /healthz, /readyz or /metrics\n");
}

void AdminEndpoints::SampleStatus() {
  const std::shared_ptr<const Snapshot> snapshot = core_.config().Current();
  CounterSample sample;
  sample.second = core_.clock()->NowMs() / 1000;
  for (size_t i = 0; i < snapshot->rule_counters.size(); ++i) {
    const RuleCounters& counters = *snapshot->rule_counters[i];
    sample.rules.emplace_back(snapshot->rules()[i].name,
                              RuleCounts{counters.allowed.load(std::memory_order_relaxed),
                                         counters.rejected.load(std::memory_order_relaxed)});
  }
  sample.store_errors = core_.metrics().StoreErrors();
  sample.check_latency = core_.metrics().CheckLatency();
  MutexLock lock(&history_mutex_);
  history_.Add(std::move(sample));
}

std::optional<HttpResponse> AdminEndpoints::StatusRoute(const HttpRequest& request) const {
  const std::string_view target = StdView(request.target());
  const std::string_view path = PathOf(target);
  if (path != "/" && path != "/status.json" && path != "/debug/top") return std::nullopt;
  if (request.method() != bhttp::verb::get) {
    return JsonError(bhttp::status::method_not_allowed, "use GET");
  }
  const std::string_view query =
      path.size() < target.size() ? target.substr(path.size() + 1) : std::string_view();
  if (query.size() > kMaxQueryBytes) return QueryError(Status::InvalidArgument("query too long"));
  std::shared_ptr<const Snapshot> snapshot = core_.config().Current();
  const StatusView view{&snapshot->config,
                        {snapshot->rejected_values.begin(), snapshot->rejected_values.end()},
                        core_.top_rejected()->Limits(),
                        core_.clock()->NowMs()};
  if (path == "/status.json") return StatusJsonAnswer(view, query);
  if (path == "/debug/top") return DebugTopAnswer(view, query);
  auto params = ParseQuery(query, {});
  if (!params.ok()) return QueryError(params.status());
  return NoStore(
      MakeResponse(bhttp::status::ok, std::string(StatusPageHtml()), "text/html; charset=utf-8"));
}

HttpResponse AdminEndpoints::StatusJsonAnswer(const StatusView& view,
                                              std::string_view query) const {
  auto params = ParseQuery(query, {"seconds"});
  if (!params.ok()) return QueryError(params.status());
  int64_t seconds = 180;
  if (auto it = params->find("seconds"); it != params->end()) {
    const std::optional<int64_t> given = NumberIn<int64_t>(it->second, 1, 180);
    if (!given) {
      return QueryError(Status::InvalidArgument("seconds must be a whole number from 1 to 180"));
    }
    seconds = *given;
  }
  const Health health{
      !core_.Unready(),
      std::chrono::duration_cast<std::chrono::seconds>(core_.clock()->Now() - started_).count()};
  std::string body;
  {
    MutexLock lock(&history_mutex_);
    body = StatusJson(view, history_, health, seconds);
  }
  return NoStore(MakeResponse(bhttp::status::ok, std::move(body), "application/json"));
}

HttpResponse AdminEndpoints::DebugTopAnswer(const StatusView& view, std::string_view query) {
  auto params = ParseQuery(query, {"name", "n"});
  if (!params.ok()) return QueryError(params.status());
  size_t n = view.config->debug_top.size;
  if (auto it = params->find("n"); it != params->end()) {
    const std::optional<size_t> given = NumberIn<size_t>(it->second, 1, 1000);
    if (!given)
      return QueryError(Status::InvalidArgument("n must be a whole number from 1 to 1000"));
    n = *given;
  }
  std::optional<std::string_view> only;
  if (auto it = params->find("name"); it != params->end()) only = it->second;
  return MakeResponse(bhttp::status::ok, DebugTopJson(view, only, n), "application/json");
}

}  // namespace sluice::http
