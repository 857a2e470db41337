#include "http/gateway_check_api.h"

#include "http/check_body.h"
#include "http/string_views.h"
#include "sluice/limiter_async.h"

namespace sluice::http {

namespace bhttp = beast::http;

Awaitable<HttpResponse> CheckApi::Handle(HttpRequest request, const Peer& peer, size_t loop) {
  const std::string_view target = StdView(request.target());
  if (target == "/v1/check") {
    if (request.method() != bhttp::verb::post) {
      co_return JsonError(bhttp::status::method_not_allowed, "use POST");
    }
    co_return co_await HandleCheckJson(request, loop);
  }
  if (target == "/v1/report") {
    if (request.method() != bhttp::verb::post) {
      co_return JsonError(bhttp::status::method_not_allowed, "use POST");
    }
    co_return co_await HandleReportJson(request, loop);
  }
  if (target == "/v1/auth" || target.starts_with("/v1/auth?")) {
    co_return co_await HandleAuthRequest(request, peer, loop);
  }
  co_return JsonError(bhttp::status::not_found,
                      "no such endpoint; try POST /v1/check or POST /v1/report");
}

Awaitable<HttpResponse> CheckApi::HandleCheckJson(const HttpRequest& request, size_t loop) {
  std::shared_ptr<const Snapshot> snapshot = core_.config().Current();
  Result<Request> parsed = ParseCheckBody(request.body());
  if (!parsed.ok()) co_return JsonError(bhttp::status::bad_request, parsed.status().message());
  double store_seconds = 0;
  Decision decision = co_await core_.Decide(*snapshot, *parsed, loop, &store_seconds);
  if (decision.error.code() == StatusCode::kInvalidArgument) {
    co_return JsonError(bhttp::status::bad_request, decision.error.message());
  }
  HttpResponse response =
      MakeResponse(decision.allowed ? bhttp::status::ok : RejectionStatus(decision),
                   DecisionJson(decision, snapshot->rules()) + "\n", "application/json");
  AddRateLimitHeaders(response, decision, *snapshot);
  const std::string* ip = parsed->Find("ip");
  core_.LogAccess(ip != nullptr ? std::string_view(*ip) : "-", parsed->method(), parsed->path(),
                  response.result_int(), decision, snapshot->rules(), store_seconds);
  co_return response;
}

Awaitable<HttpResponse> CheckApi::HandleReportJson(const HttpRequest& request, size_t loop) {
  std::shared_ptr<const Snapshot> snapshot = core_.config().Current();
  Result<Request> parsed = ParseCheckBody(request.body());
  if (!parsed.ok()) co_return JsonError(bhttp::status::bad_request, parsed.status().message());
  if (!parsed->cost()) co_return JsonError(bhttp::status::bad_request, "the body needs \"cost\"");
  const int64_t cost = *parsed->cost();
  const Decision decision = co_await AsyncReport(
      *snapshot->limiters[loop], *parsed,
      [cost](const Rule&) { return std::optional<int64_t>(cost); }, kUseAwaitable);
  if (decision.error.code() == StatusCode::kInvalidArgument) {
    co_return JsonError(bhttp::status::bad_request, decision.error.message());
  }
  if (!decision.checked) core_.WarnLostReport(decision.error);
  // Never refused for being over: the report is taken, and the decision says what is left.
  co_return MakeResponse(decision.checked ? bhttp::status::ok : bhttp::status::service_unavailable,
                         DecisionJson(decision, snapshot->rules()) + "\n", "application/json");
}

// The original request's method and URI come in X-Original-Method and X-Original-URI, as the
// example configuration sets them; its other headers come along as they were.
Awaitable<HttpResponse> CheckApi::HandleAuthRequest(const HttpRequest& request, const Peer& peer,
                                                    size_t loop) {
  std::shared_ptr<const Snapshot> snapshot = core_.config().Current();
  const std::string_view uri = FindHeader(request, "X-Original-URI").value_or("");
  const std::string_view method = FindHeader(request, "X-Original-Method").value_or("");
  Request attributes = AttributesOf(*snapshot, request, peer, method, PathOf(uri));
  double store_seconds = 0;
  Decision decision = co_await core_.Decide(*snapshot, attributes, loop, &store_seconds);
  if (decision.error.code() == StatusCode::kInvalidArgument) {
    co_return MakeResponse(bhttp::status::bad_request, decision.error.message() + "\n");
  }
  const bool deny_403 = StdView(request.target()).find("deny=403") != std::string_view::npos;
  bhttp::status status = bhttp::status::ok;
  if (!decision.allowed) {
    status = deny_403 && decision.checked ? bhttp::status::forbidden : RejectionStatus(decision);
  }
  HttpResponse response = MakeResponse(status, "");
  AddRateLimitHeaders(response, decision, *snapshot);
  core_.LogAccess(ClientOf(attributes, peer), method, PathOf(uri), response.result_int(), decision,
                  snapshot->rules(), store_seconds);
  co_return response;
}

}  // namespace sluice::http
