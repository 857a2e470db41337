#include "http/gateway_proxy.h"

#include <cassert>
#include <charconv>
#include <chrono>
#include <nlohmann/json.hpp>

#include "http/string_views.h"
#include "sluice/limiter_async.h"

namespace sluice::http {

namespace bhttp = beast::http;
using json = nlohmann::json;

namespace {

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

// The answer to a request the limiter did not allow: 400 for attributes that cannot be keys,
// else the rejection, with its rate limit headers.
HttpResponse Refusal(const Decision& decision, const Snapshot& snapshot, unsigned version) {
  if (decision.error.code() == StatusCode::kInvalidArgument) {
    return JsonError(bhttp::status::bad_request, decision.error.message());
  }
  HttpResponse response =
      MakeResponse(RejectionStatus(decision), RejectionBody(decision, snapshot.rules()),
                   "application/json", version);
  AddRateLimitHeaders(response, decision, snapshot);
  return response;
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

}  // namespace

Awaitable<void> ProxyHandler::ChargeReportedCosts(const Snapshot& snapshot, const Request& request,
                                                  const HttpResponse& response, Decision& decision,
                                                  size_t loop) {
  Decision report = co_await AsyncReport(
      *snapshot.limiters[loop], request,
      [&response](const Rule& rule) -> std::optional<int64_t> {
        if (!rule.CostReported()) return std::nullopt;
        return ReportedCostOf(rule, response);
      },
      kUseAwaitable);
  if (!report.checked) {
    core_.WarnLostReport(report.error);
    co_return;
  }
  decision = WithReport(std::move(decision), report);
}

HttpResponse ProxyHandler::Refuse(const Snapshot& snapshot, const HttpRequest& request,
                                  const Request& attributes, const Peer& peer,
                                  const Decision& decision, double store_seconds) const {
  HttpResponse refusal = Refusal(decision, snapshot, request.version());
  core_.LogAccess(ClientOf(attributes, peer), StdView(request.method_string()),
                  PathOf(StdView(request.target())), refusal.result_int(), decision,
                  snapshot.rules(), store_seconds);
  return refusal;
}

Awaitable<HttpResponse> ProxyHandler::Handle(HttpRequest request, const Peer& peer, size_t loop) {
  // What does not wait is done in plain functions: all a coroutine's locals live in its frame,
  // and a frame over 1 KiB costs malloc much more than a smaller one.
  std::shared_ptr<const Snapshot> snapshot = core_.config().Current();
  const Request attributes =
      AttributesOf(*snapshot, request, peer, StdView(request.method_string()),
                   PathOf(StdView(request.target())));
  double store_seconds = 0;
  Decision decision = co_await core_.Decide(*snapshot, attributes, loop, &store_seconds);
  if (!decision.allowed || decision.error.code() == StatusCode::kInvalidArgument) {
    co_return Refuse(*snapshot, request, attributes, peer, decision, store_seconds);
  }
  assert(loop < upstreams_.size() && "SetUpstreams before the proxy serves");
  const unsigned version = request.version();
  PrepareUpstreamRequest(request, peer, snapshot->upstream_authority);
  const Clock& clock = *core_.clock();
  const Clock::TimePoint start = clock.Now();
  HttpResponse response = co_await upstreams_[loop]->Forward(request);
  core_.metrics().RecordUpstream(UpstreamAnswered(response),
                                 std::chrono::duration<double>(clock.Now() - start).count());
  // Charged before the response is relayed, so that its headers say what is left after it; a
  // failed upstream (no answer, or a server error) costs nothing.
  if (snapshot->reports_costs && decision.checked && response.result_int() < 500) {
    co_await ChargeReportedCosts(*snapshot, attributes, response, decision, loop);
  }
  PrepareClientResponse(response, request.method() == bhttp::verb::head);
  response.version(version);
  AddRateLimitHeaders(response, decision, *snapshot);
  core_.LogAccess(ClientOf(attributes, peer), StdView(request.method_string()),
                  PathOf(StdView(request.target())), response.result_int(), decision,
                  snapshot->rules(), store_seconds);
  co_return response;
}

}  // namespace sluice::http
