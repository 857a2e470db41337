// The example nginx configuration (docs/nginx-auth-request.conf), run by a real nginx in front
// of `sluice serve`'s check API and the demo upstream.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "e2e/processes.h"

namespace sluice {
namespace {

using testing::Fetch;
using testing::FreePort;
using testing::HttpResult;

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(NginxE2eTest, AuthRequestExampleLimitsThroughNginx) {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): before any thread of the test starts
  if (std::system("command -v nginx >/dev/null") != 0)
    GTEST_FAIL() << "nginx missing: run scripts/bootstrap";
  e2e::Upstream upstream;
  e2e::GatewayProcess sluice(upstream.port(),
                             "client: {trusted_proxies: [127.0.0.1/32]}\n"
                             "rules:\n  - {name: per-key, key: key, capacity: 3, period: 1h}\n");
  const uint16_t nginx_port = FreePort();
  std::ifstream example(std::string(SLUICE_SOURCE_DIR) + "/docs/nginx-auth-request.conf");
  std::stringstream server;
  server << example.rdbuf();
  std::string block = server.str();
  block = Replace(block, "listen 127.0.0.1:8000;",
                  "listen 127.0.0.1:" + std::to_string(nginx_port) + ";");
  block = Replace(block, "http://127.0.0.1:9000",
                  "http://127.0.0.1:" + std::to_string(upstream.port()));
  block =
      Replace(block, "http://127.0.0.1:8081", "http://127.0.0.1:" + std::to_string(sluice.check()));

  const std::string dir = "/tmp/sluice-test-nginx-" + std::to_string(nginx_port);
  std::filesystem::create_directories(dir + "/logs");
  std::ofstream(dir + "/nginx.conf")
      << "daemon off;\nmaster_process off;\npid " << dir << "/nginx.pid;\nerror_log " << dir
      << "/logs/error.log;\nevents { worker_connections 256; }\nhttp {\n  access_log off;\n"
      << "  client_body_temp_path " << dir << "/body;\n  proxy_temp_path " << dir << "/proxy;\n"
      << block << "}\n";
  testing::Process nginx({"nginx", "-p", dir, "-c", dir + "/nginx.conf"}, dir + "/logs/stdout.log");
  ASSERT_TRUE(e2e::WaitUntil([&] { return Fetch(nginx_port, "GET", "/").status != 0; },
                             std::chrono::milliseconds(5000)));

  for (int i = 2; i >= 0; --i) {
    HttpResult r = Fetch(nginx_port, "GET", "/api/x", {{"X-Api-Key", "ak_nginx"}});
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.Header("ratelimit"), "\"per-key\";r=" + std::to_string(i) + ";t=1200");
    EXPECT_NE(r.body.find("\"ok\":true"), std::string::npos);  // from the upstream
  }
  HttpResult limited = Fetch(nginx_port, "GET", "/api/x", {{"X-Api-Key", "ak_nginx"}});
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(limited.Header("retry-after"), "1200");
  EXPECT_EQ(limited.Header("ratelimit-policy"), "\"per-key\";q=3;w=3600");
  EXPECT_EQ(Fetch(nginx_port, "GET", "/api/x", {{"X-Api-Key", "ak_other"}}).status, 200);
}

}  // namespace
}  // namespace sluice
