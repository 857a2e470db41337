// A Gateway on the memory store, driven in-process: a request built in the test goes in, and its
// response comes out of an io_context the test runs. No process, no socket: the proxy is given
// no upstream, so only requests it refuses may be sent to it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "http/gateway.h"
#include "http/string_views.h"
#include "sluice/clock.h"
#include "sluice/memory_store.h"
#include "support/manual_clock.h"

namespace sluice::http::testing {

using Headers = std::vector<std::pair<std::string, std::string>>;

// The configuration `yaml` with an upstream (which no test reaches) before it.
Result<config::Config> ConfigOf(const std::string& yaml);

// A request to `target` with the host gateway.test, `headers` and, when not empty, the JSON
// `body`.
HttpRequest MakeRequest(beast::http::verb method, std::string_view target,
                        const Headers& headers = {}, std::string body = "");

// The value of the response's header `name`; empty when it has none.
std::string Header(const HttpResponse& response, std::string_view name);

// Its members are defined in gateway_harness.cc, compiled once: the coroutines and Asio
// templates they instantiate would otherwise be compiled again by every test file.
class InProcessGateway {
 public:
  // A gateway with the configuration `yaml` in force; `ready` answers for the store at /readyz.
  explicit InProcessGateway(
      const std::string& yaml, std::function<bool()> ready = [] { return true; });
  ~InProcessGateway();
  InProcessGateway(const InProcessGateway&) = delete;
  InProcessGateway& operator=(const InProcessGateway&) = delete;

  // Puts the configuration `yaml` in force, as a reload does.
  Status Reconfigure(const std::string& yaml);

  // The answers of each front end to `request`, from the peer `peer`.
  HttpResponse Proxy(HttpRequest request, std::string_view peer = "127.0.0.1");
  HttpResponse CheckApi(HttpRequest request, std::string_view peer = "127.0.0.1");
  HttpResponse Admin(HttpRequest request);

  // POST /v1/check with `body`.
  HttpResponse Check(std::string body);
  // nginx's auth_request for the original request `method` `uri` with `headers`, from `peer`.
  HttpResponse Auth(std::string_view method, std::string_view uri, Headers headers = {},
                    std::string_view target = "/v1/auth", std::string_view peer = "127.0.0.1");
  // GET `target` of the admin endpoints.
  HttpResponse AdminGet(std::string_view target);

  Gateway& gateway() { return *gateway_; }

 private:
  // A peer kept for the rest of the test: a handler may hold it until its response is ready.
  const Peer& PeerAt(std::string_view address);

  HttpResponse Run(Awaitable<HttpResponse> answer);

  std::unique_ptr<asio::io_context> io_;
  // Still: a bucket emptied and read in the same millisecond gives whole retry times.
  std::shared_ptr<sluice::testing::ManualClock> clock_ =
      std::make_shared<sluice::testing::ManualClock>(1'000'000);
  std::unique_ptr<Gateway> gateway_;
  std::vector<std::unique_ptr<Peer>> peers_;
};

}  // namespace sluice::http::testing
