#include "http/gateway_harness.h"

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <future>

namespace sluice::http::testing {

Result<config::Config> ConfigOf(const std::string& yaml) {
  return config::ParseConfig("upstream: {address: 127.0.0.1:9, timeout: 1s}\n" + yaml, "test");
}

HttpRequest MakeRequest(beast::http::verb method, std::string_view target, const Headers& headers,
                        std::string body) {
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

std::string Header(const HttpResponse& response, std::string_view name) {
  auto it = response.find(BeastView(name));
  return it == response.end() ? "" : std::string(StdView(it->value()));
}

InProcessGateway::InProcessGateway(const std::string& yaml, std::function<bool()> ready)
    : io_(std::make_unique<asio::io_context>()),
      gateway_(std::make_unique<Gateway>(
          std::vector<std::shared_ptr<Store>>{std::make_shared<MemoryStore>(clock_)},
          std::move(ready), nullptr, clock_)) {
  const Status status = Reconfigure(yaml);
  EXPECT_TRUE(status.ok()) << status.message();
}

InProcessGateway::~InProcessGateway() = default;

Status InProcessGateway::Reconfigure(const std::string& yaml) {
  Result<config::Config> config = ConfigOf(yaml);
  if (!config.ok()) return config.status();
  return gateway_->Reconfigure(std::move(config).value());
}

HttpResponse InProcessGateway::Proxy(HttpRequest request, std::string_view peer) {
  return Run(gateway_->HandleProxy(std::move(request), PeerAt(peer), 0));
}

HttpResponse InProcessGateway::CheckApi(HttpRequest request, std::string_view peer) {
  return Run(gateway_->HandleCheck(std::move(request), PeerAt(peer), 0));
}

HttpResponse InProcessGateway::Admin(HttpRequest request) {
  return Run(gateway_->HandleAdmin(std::move(request), PeerAt("127.0.0.1"), 0));
}

HttpResponse InProcessGateway::Check(std::string body) {
  return CheckApi(MakeRequest(beast::http::verb::post, "/v1/check", {}, std::move(body)));
}

HttpResponse InProcessGateway::Auth(std::string_view method, std::string_view uri, Headers headers,
                                    std::string_view target, std::string_view peer) {
  headers.emplace_back("X-Original-Method", method);
  headers.emplace_back("X-Original-URI", uri);
  return CheckApi(MakeRequest(beast::http::verb::get, target, headers), peer);
}

HttpResponse InProcessGateway::AdminGet(std::string_view target) {
  return Admin(MakeRequest(beast::http::verb::get, target));
}

const Peer& InProcessGateway::PeerAt(std::string_view address) {
  peers_.push_back(std::make_unique<Peer>(asio::ip::make_address(std::string(address))));
  return *peers_.back();
}

HttpResponse InProcessGateway::Run(Awaitable<HttpResponse> answer) {
  std::future<HttpResponse> response =
      asio::co_spawn(io_->get_executor(), std::move(answer), asio::use_future);
  io_->restart();
  io_->run();
  return response.get();
}

}  // namespace sluice::http::testing
