// The gateway as a reverse proxy: every request checked, then forwarded to the upstream or
// refused with 429 (503 when the store cannot be asked and the policy is to fail closed).
#pragma once

#include <memory>
#include <vector>

#include "http/gateway_core.h"
#include "http/upstream.h"

namespace sluice::http {

class ProxyHandler {
 public:
  // `core` must outlive the handler.
  explicit ProxyHandler(GatewayCore& core) : core_(core) {}

  // Where allowed requests go, a pool per event loop; needed before Handle is used.
  void SetUpstreams(std::vector<std::unique_ptr<UpstreamPool>> upstreams) {
    upstreams_ = std::move(upstreams);
  }

  // Checks `request`, then forwards it or refuses it. `loop` is the event loop it runs on.
  Awaitable<HttpResponse> Handle(HttpRequest request, const Peer& peer, size_t loop);

 private:
  // Charges the rules whose cost `response` reports, and gives `decision` what is left. The
  // decision is changed in place, not returned: a returned one would take room in the handler's
  // coroutine frame.
  Awaitable<void> ChargeReportedCosts(const Snapshot& snapshot, const Request& request,
                                      const HttpResponse& response, Decision& decision,
                                      size_t loop);

  // The answer to a request the limiter did not allow, logged as such.
  HttpResponse Refuse(const Snapshot& snapshot, const HttpRequest& request,
                      const Request& attributes, const Peer& peer, const Decision& decision,
                      double store_seconds) const;

  GatewayCore& core_;
  std::vector<std::unique_ptr<UpstreamPool>> upstreams_;
};

}  // namespace sluice::http
