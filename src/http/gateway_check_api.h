// The gateway's check API, for services that ask before they act: POST /v1/check (JSON in,
// the decision as JSON out), POST /v1/report (a cost charged after the fact), and /v1/auth,
// nginx's auth_request form (the original request's method and URI in headers, the answer in
// the status alone).
#pragma once

#include "http/gateway_core.h"

namespace sluice::http {

class CheckApi {
 public:
  // `core` must outlive the API.
  explicit CheckApi(GatewayCore& core) : core_(core) {}

  // Routes `request` to its endpoint; 404 or 405 when there is none for its target or method.
  Awaitable<HttpResponse> Handle(HttpRequest request, const Peer& peer, size_t loop);

 private:
  // POST /v1/check: the attributes in a JSON body, the decision as JSON.
  Awaitable<HttpResponse> HandleCheckJson(const HttpRequest& request, size_t loop);
  // POST /v1/report: charges a request's rules what it cost, after the fact.
  Awaitable<HttpResponse> HandleReportJson(const HttpRequest& request, size_t loop);
  // nginx's auth_request: 200 to let the request through; a rejection's 429 (or, with
  // "?deny=403", 403, since nginx denies only on 401 and 403).
  Awaitable<HttpResponse> HandleAuthRequest(const HttpRequest& request, const Peer& peer,
                                            size_t loop);

  GatewayCore& core_;
};

}  // namespace sluice::http
