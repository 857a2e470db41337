// A Gateway on the memory store, driven in-process: a request built in the test goes in, and its
// response comes out of an io_context the test runs. No process, no socket: the proxy is given
// no upstream, so only requests it refuses may be sent to it.
#pragma once

#include <utility>  // before asio: Boost 1.74's coroutine support needs it first

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <future>
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
inline Result<config::Config> ConfigOf(const std::string& yaml) {
  return config::ParseConfig("upstream: {address: 127.0.0.1:9, timeout: 1s}\n" + yaml, "test");
}

inline HttpRequest MakeRequest(beast::http::verb method, std::string_view target,
                               const Headers& headers = {}, std::string body = "") {
  HttpRequest request{method, BeastView(target), 11};
  request.set(beast::http::field::host, "gateway.test");
  for (const auto& [name, value] : headers) request.insert(BeastView(name), value);
  if (!body.empty()) {
    request.set(beast::http::field::content_type, "application/json");
    request.body() = std::move(body);
    request.prepare_payload();
  }
  return request;
}

inline std::string Header(const HttpResponse& response, std::string_view name) {
  auto it = response.find(BeastView(name));
  return it == response.end() ? "" : std::string(StdView(it->value()));
}

class InProcessGateway {
 public:
  // A gateway with the configuration `yaml` in force; `ready` answers for the store at /readyz.
  explicit InProcessGateway(
      const std::string& yaml, std::function<bool()> ready = [] { return true; })
      : gateway_({std::make_shared<MemoryStore>(clock_)}, std::move(ready), nullptr, clock_) {
    const Status status = Reconfigure(yaml);
    EXPECT_TRUE(status.ok()) << status.message();
  }

  // Puts the configuration `yaml` in force, as a reload does.
  Status Reconfigure(const std::string& yaml) {
    Result<config::Config> config = ConfigOf(yaml);
    if (!config.ok()) return config.status();
    return gateway_.Reconfigure(std::move(config).value());
  }

  // The answers of each front end to `request`, from the peer `peer`.
  HttpResponse Proxy(HttpRequest request, std::string_view peer = "127.0.0.1") {
    return Run(gateway_.HandleProxy(std::move(request), PeerAt(peer), 0));
  }
  HttpResponse CheckApi(HttpRequest request, std::string_view peer = "127.0.0.1") {
    return Run(gateway_.HandleCheck(std::move(request), PeerAt(peer), 0));
  }
  HttpResponse Admin(HttpRequest request) {
    return Run(gateway_.HandleAdmin(std::move(request), PeerAt("127.0.0.1"), 0));
  }

  // POST /v1/check with `body`.
  HttpResponse Check(std::string body) {
    return CheckApi(MakeRequest(beast::http::verb::post, "/v1/check", {}, std::move(body)));
  }
  // nginx's auth_request for the original request `method` `uri` with `headers`, from `peer`.
  HttpResponse Auth(std::string_view method, std::string_view uri, Headers headers = {},
                    std::string_view target = "/v1/auth", std::string_view peer = "127.0.0.1") {
    headers.emplace_back("X-Original-Method", method);
    headers.emplace_back("X-Original-URI", uri);
    return CheckApi(MakeRequest(beast::http::verb::get, target, headers), peer);
  }
  // GET `target` of the admin endpoints.
  HttpResponse AdminGet(std::string_view target) {
    return Admin(MakeRequest(beast::http::verb::get, target));
  }

  Gateway& gateway() { return gateway_; }

 private:
  // A peer kept for the rest of the test: a handler may hold it until its response is ready.
  const Peer& PeerAt(std::string_view address) {
    peers_.push_back(std::make_unique<Peer>(asio::ip::make_address(std::string(address))));
    return *peers_.back();
  }

  HttpResponse Run(Awaitable<HttpResponse> answer) {
    std::future<HttpResponse> response =
        asio::co_spawn(io_.get_executor(), std::move(answer), asio::use_future);
    io_.restart();
    io_.run();
    return response.get();
  }

  asio::io_context io_;
  // Still: a bucket emptied and read in the same millisecond gives whole retry times.
  std::shared_ptr<sluice::testing::ManualClock> clock_ =
      std::make_shared<sluice::testing::ManualClock>(1'000'000);
  Gateway gateway_;
  std::vector<std::unique_ptr<Peer>> peers_;
};

}  // namespace sluice::http::testing
