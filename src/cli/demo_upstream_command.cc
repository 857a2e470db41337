#include "demo_upstream_command.h"

#include <spdlog/spdlog.h>

#include <boost/asio/signal_set.hpp>
#include <charconv>

#include "config/network.h"
#include "http/server.h"
#include "http/string_views.h"

namespace sluice::cli {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;

// The text after "NAME=" in `target`'s query, up to the next '&'; empty when absent. A request
// target holds no CR or LF, so the text is safe in a header.
std::string_view QueryText(std::string_view target, std::string_view name) {
  const size_t query = target.find('?');
  if (query == std::string_view::npos) return {};
  const std::string key = std::string(name) + "=";
  size_t at = target.find(key, query);
  while (at != std::string_view::npos && target[at - 1] != '?' && target[at - 1] != '&') {
    at = target.find(key, at + 1);
  }
  if (at == std::string_view::npos) return {};
  const std::string_view rest = target.substr(at + key.size());
  return rest.substr(0, rest.find('&'));
}

// QueryText as a number within [low, high]; `otherwise` when absent or not a number.
int64_t QueryNumber(std::string_view target, std::string_view name, int64_t low, int64_t high,
                    int64_t otherwise) {
  const std::string_view text = QueryText(target, name);
  int64_t value = otherwise;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return std::clamp(value, low, high);
}

// The answer to `request`, on the event loop `io`.
http::Awaitable<http::HttpResponse> Answer(http::HttpRequest request, asio::io_context& io) {
  const std::string target(request.target().data(), request.target().size());
  if (target.starts_with("/slow")) {
    asio::steady_timer timer(io,
                             std::chrono::milliseconds(QueryNumber(target, "ms", 0, 60'000, 0)));
    co_await timer.async_wait(http::kUseAwaitable);
  }
  std::string body = R"({"ok":true,"method":")" + std::string(request.method_string()) +
                     R"(","bytes":)" + std::to_string(request.body().size()) + "}\n";
  // /usage?tokens=N[&status=S]: a response that says what it used, as an LLM API's does.
  const bool usage = target.starts_with("/usage");
  const auto status =
      static_cast<bhttp::status>(usage ? QueryNumber(target, "status", 200, 599, 200) : 200);
  http::HttpResponse response =
      http::MakeResponse(status, std::move(body), "application/json", request.version());
  if (usage) response.set("X-Usage-Tokens", http::BeastView(QueryText(target, "tokens")));
  // Echo what the gateway forwarded, so tests can see it.
  if (auto it = request.find("X-Forwarded-For"); it != request.end()) {
    response.set("X-Seen-Forwarded-For", it->value());
  }
  if (auto it = request.find("X-Hop"); it != request.end()) response.set("X-Seen-Hop", it->value());
  response.set("X-Seen-Target", request.target());
  if (auto it = request.find(bhttp::field::host); it != request.end()) {
    response.set("X-Seen-Host", it->value());
  }
  co_return response;
}

int Run(const std::string& listen) {
  Result<config::Endpoint> where = config::ParseEndpoint(listen);
  if (!where.ok()) {
    spdlog::error("--listen {}", where.status().message());
    return 1;
  }
  http::EventLoops loops(1);
  http::Server server(loops,
                      [&loops](http::HttpRequest request, const http::Peer& /*peer*/, size_t loop) {
                        return Answer(std::move(request), loops[loop]);
                      },
                      {});
  if (Status s = server.Listen(*where); !s.ok()) {
    spdlog::error("{}", s.message());
    return 1;
  }
  spdlog::info("demo upstream listening on {}:{}", where->host, server.port());
  asio::signal_set signals(loops[0], SIGTERM, SIGINT);
  signals.async_wait([&loops](const boost::system::error_code&, int) { loops.Stop(); });
  loops.Start();
  loops.Join();
  return 0;
}

}  // namespace

void AddDemoUpstreamCommand(CLI::App& app) {
  auto listen = std::make_shared<std::string>("127.0.0.1:9000");
  CLI::App* cmd =
      app.add_subcommand("demo-upstream", "Run a tiny HTTP service for demos and tests");
  cmd->add_option("--listen", *listen, "host:port")->capture_default_str();
  cmd->callback([listen] {
    if (int rc = Run(*listen); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace sluice::cli
