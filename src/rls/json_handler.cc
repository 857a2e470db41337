#include "rls/json_handler.h"

#include <string>

#include "rls/json_form.h"

namespace sluice::rls {
namespace {

namespace status = boost::beast::http;

http::HttpResponse Answer(const http::HttpRequest& request, status::status code, std::string body,
                          std::string_view type = "text/plain; charset=utf-8") {
  return http::MakeResponse(code, std::move(body), type, request.version(), request.keep_alive());
}

}  // namespace

http::Awaitable<http::HttpResponse> HandleJson(Service& service, http::HttpRequest request,
                                               size_t loop) {
  if (request.target() != "/json")
    co_return Answer(request, status::status::not_found, "not found\n");
  if (request.method() != status::verb::post) {
    http::HttpResponse response =
        Answer(request, status::status::method_not_allowed, "POST only\n");
    response.set(status::field::allow, "POST");
    co_return response;
  }
  RateLimitRequest call;
  if (const Status parsed = ParseRateLimitRequestJson(request.body(), call); !parsed.ok()) {
    co_return Answer(request, status::status::bad_request,
                     "malformed RateLimitRequest: " + std::string(parsed.message()) + "\n");
  }
  Result<RateLimitResponse> answer =
      co_await service.AsyncShouldRateLimit(call, loop, http::kUseAwaitable);
  if (!answer.ok()) {
    co_return Answer(request,
                     answer.status().code() == StatusCode::kInvalidArgument
                         ? status::status::bad_request
                         : status::status::service_unavailable,
                     answer.status().message() + "\n");
  }
  std::string body = RateLimitResponseJson(*answer);
  body.push_back('\n');
  co_return Answer(request,
                   answer->overall_code() == RateLimitResponse::OVER_LIMIT
                       ? status::status::too_many_requests
                       : status::status::ok,
                   std::move(body), "application/json");
}

}  // namespace sluice::rls
