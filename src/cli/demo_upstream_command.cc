#include <utility>  // before asio: Boost 1.74's coroutine support needs it first

#include "demo_upstream_command.h"

#include <spdlog/spdlog.h>

#include <boost/asio/signal_set.hpp>
#include <charconv>

#include "config/network.h"
#include "http/server.h"

namespace sluice::cli {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;

// Milliseconds asked for by "?ms=N" in `target`, capped at a minute.
int64_t SlowMs(std::string_view target) {
  const size_t at = target.find("ms=");
  if (at == std::string_view::npos) return 0;
  int64_t ms = 0;
  std::from_chars(target.data() + at + 3, target.data() + target.size(), ms);
  return std::clamp<int64_t>(ms, 0, 60'000);
}

http::Awaitable<http::HttpResponse> Answer(http::HttpRequest request, const http::Peer& /*peer*/,
                                           size_t /*loop*/) {
  const std::string target(request.target().data(), request.target().size());
  if (target.starts_with("/slow")) {
    asio::steady_timer timer(co_await asio::this_coro::executor,
                             std::chrono::milliseconds(SlowMs(target)));
    co_await timer.async_wait(http::kUseAwaitable);
  }
  std::string body = "{\"ok\":true,\"method\":\"" + std::string(request.method_string()) +
                     "\",\"bytes\":" + std::to_string(request.body().size()) + "}\n";
  http::HttpResponse response =
      http::MakeResponse(bhttp::status::ok, std::move(body), "application/json", request.version());
  // Echo what the gateway forwarded, so tests can see it.
  if (auto it = request.find("X-Forwarded-For"); it != request.end()) {
    response.set("X-Seen-Forwarded-For", it->value());
  }
  if (auto it = request.find("X-Hop"); it != request.end()) response.set("X-Seen-Hop", it->value());
  co_return response;
}

int Run(const std::string& listen) {
  Result<config::Endpoint> where = config::ParseEndpoint(listen);
  if (!where.ok()) {
    spdlog::error("--listen {}", where.status().message());
    return 1;
  }
  http::EventLoops loops(1);
  http::Server server(loops, Answer, {});
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
