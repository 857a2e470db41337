// POST /json: the ShouldRateLimit call in protobuf's JSON mapping, as envoyproxy/ratelimit serves
// it over HTTP. 200 when OK, 429 when over the limit, 400 for a malformed request.
#pragma once

#include "http/server.h"
#include "rls/service.h"

namespace sluice::rls {

// `loop`: the index of the event loop the request came in on, whose store the call uses.
http::Awaitable<http::HttpResponse> HandleJson(Service& service, http::HttpRequest request,
                                               size_t loop);

}  // namespace sluice::rls
