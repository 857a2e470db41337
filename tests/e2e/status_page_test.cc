// The admin listener's views for people, end to end: /debug/top (who is being limited), the
// status page in a real headless browser while traffic flows, and their bad input.
#include <utility>  // before asio: Boost 1.74's coroutine support needs it first

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "e2e/processes.h"

namespace sluice {
namespace {

using e2e::Gateway;
using e2e::Upstream;
using e2e::WaitUntil;
using json = nlohmann::json;
using std::chrono::milliseconds;
using testing::Fetch;
using testing::HttpResult;

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;

// Sends `bodies` to POST /v1/check on one kept-alive connection, pipelined in batches (a flood
// of one request a connection would take the test's seconds on connecting); the statuses.
std::vector<int> CheckPipelined(uint16_t port, const std::vector<std::string>& bodies) {
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::make_address("127.0.0.1"), port});
  boost::beast::flat_buffer buffer;
  std::vector<int> statuses;
  constexpr size_t kBatch = 256;
  for (size_t first = 0; first < bodies.size(); first += kBatch) {
    const size_t end = std::min(bodies.size(), first + kBatch);
    std::string wire;
    for (size_t i = first; i < end; ++i) {
      wire +=
          "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          "Content-Length: " +
          std::to_string(bodies[i].size()) + "\r\n\r\n" + bodies[i];
    }
    asio::write(socket, asio::buffer(wire));
    for (size_t i = first; i < end; ++i) {
      bhttp::response<bhttp::string_body> response;
      bhttp::read(socket, buffer, response);
      statuses.push_back(static_cast<int>(response.result_int()));
    }
  }
  return statuses;
}

std::string KeyBody(const std::string& key) {
  return json{{"attributes", {{"key", key}, {"ip", "198.51.100.7"}}}}.dump();
}

const char* kRules =
    "rules:\n"
    "  - {name: per-ip, key: ip, capacity: 1000000, period: 1h}\n"
    "  - {name: per-key, key: key, capacity: 1, tokens: 1, period: 1h}\n";

TEST(StatusPageE2eTest, DebugTopRanksTheHeavyHitterMaskedUnderAFloodOfDistinctKeys) {
  Upstream upstream;
  Gateway gateway(upstream.port(), std::string("debug_top: {size: 10}\n") + kRules);
  const std::string heavy = "ak_live_heavy_hitter_0042";
  std::vector<std::string> bodies;
  for (int i = 0; i < 301; ++i) bodies.push_back(KeyBody(heavy));
  // 5,000 distinct keys, each rejected once (the first of two allowed): far more than kept.
  for (int i = 0; i < 5'000; ++i) {
    bodies.push_back(KeyBody("ak_flood_" + std::to_string(i)));
    bodies.push_back(KeyBody("ak_flood_" + std::to_string(i)));
  }
  const std::vector<int> statuses = CheckPipelined(gateway.check(), bodies);
  EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 429), 300 + 5'000);

  const auto start = std::chrono::steady_clock::now();
  const HttpResult top = Fetch(gateway.admin(), "GET", "/debug/top");
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(500));
  ASSERT_EQ(top.status, 200) << top.body;
  EXPECT_EQ(top.Header("content-type"), "application/json");
  EXPECT_EQ(top.body.find(heavy), std::string::npos) << "an API key shown whole";
  const json doc = json::parse(top.body);
  const json& per_key = doc["rules"]["per-key"];
  ASSERT_EQ(per_key.size(), 10u);  // the configured size, however many clients
  EXPECT_TRUE(per_key[0]["value"].get<std::string>().starts_with("ak_liv…"));
  EXPECT_GE(per_key[0]["rejected"].get<int>(), 300);
  EXPECT_LE(per_key[0]["rejected"].get<int>() - per_key[0]["error"].get<int>(), 300);
  EXPECT_LT(per_key[1]["rejected"].get<int>(), 300);
  EXPECT_TRUE(doc["rules"]["per-ip"].empty());  // it never rejected
  EXPECT_TRUE(doc["limits"].empty());

  const json one = json::parse(Fetch(gateway.admin(), "GET", "/debug/top?name=per-key&n=3").body);
  EXPECT_EQ(one["rules"].size(), 1u);
  EXPECT_EQ(one["rules"]["per-key"].size(), 3u);
}

TEST(StatusPageE2eTest, RevealKeysShowsThemWholeAndAddressesAreAlwaysWhole) {
  Upstream upstream;
  Gateway gateway(upstream.port(),
                  "debug_top: {size: 5, reveal_keys: true}\n"
                  "rules:\n"
                  "  - {name: per-ip, key: ip, capacity: 1, period: 1h}\n"
                  "  - {name: per-key, key: key, capacity: 1, period: 1h}\n");
  for (int i = 0; i < 3; ++i) gateway.Get("/", {{"X-Api-Key", "ak_revealed_123456"}});
  const json doc = json::parse(Fetch(gateway.admin(), "GET", "/debug/top").body);
  EXPECT_EQ(doc["rules"]["per-key"][0]["value"], "ak_revealed_123456");
  EXPECT_EQ(doc["rules"]["per-ip"][0]["value"], "127.0.0.1");
  EXPECT_EQ(doc["rules"]["per-ip"][0]["rejected"], 2);
}

TEST(StatusPageE2eTest, MalformedQueriesAndMethodsAreRefused) {
  Upstream upstream;
  Gateway gateway(upstream.port(), kRules);
  for (const char* target :
       {"/debug/top?n=abc", "/debug/top?n=0", "/debug/top?n=%zz", "/debug/top?bogus=1",
        "/debug/top?name=a&name=b", "/debug/top?name=%0d%0a", "/status.json?seconds=0",
        "/status.json?seconds=1x", "/status.json?seconds=%", "/?x=1", "/?&"}) {
    const HttpResult r = Fetch(gateway.admin(), "GET", target);
    EXPECT_EQ(r.status, 400) << target << ": " << r.body;
    EXPECT_TRUE(json::accept(r.body)) << r.body;
  }
  const std::string long_query = "/debug/top?name=" + std::string(4'000, 'a');
  EXPECT_EQ(Fetch(gateway.admin(), "GET", long_query).status, 400);
  EXPECT_EQ(Fetch(gateway.admin(), "POST", "/debug/top").status, 405);
  for (const char* target : {"/", "/status.json", "/status.json?seconds=60", "/debug/top?n=1"}) {
    EXPECT_EQ(Fetch(gateway.admin(), "GET", target).status, 200) << target;
  }
  EXPECT_EQ(Fetch(gateway.admin(), "GET", "/healthz").status, 200);  // the others unchanged
}

TEST(StatusPageE2eTest, NoSecretOnThePageOrItsJson) {
  Upstream upstream;
  const uint16_t nobody = testing::FreePort();  // the store cannot be reached: not ready
  Gateway gateway(upstream.port(),
                  "store: {type: redis, url: 'redis://app:hunter2-store-pass@127.0.0.1:" +
                      std::to_string(nobody) + "', timeout: 50ms}\n" +
                      "tenants: {ak_tenant_secret_9999: org_acme}\n" + kRules);
  for (const char* target : {"/", "/status.json", "/debug/top"}) {
    const HttpResult r = Fetch(gateway.admin(), "GET", target);
    ASSERT_EQ(r.status, 200) << target;
    for (const char* secret : {"hunter2-store-pass", "ak_tenant_secret_9999"}) {
      EXPECT_EQ(r.body.find(secret), std::string::npos) << secret << " in " << target;
    }
  }
  const json status = json::parse(Fetch(gateway.admin(), "GET", "/status.json").body);
  EXPECT_FALSE(status["ready"].get<bool>());
  EXPECT_EQ(status["store"]["password"], "(set)");
  EXPECT_EQ(status["config"]["tenants"].begin().value(), "org_acme");
}

// What a run of chromium wrote (the DOM, with its log lines around it).
std::string Chromium(const std::vector<std::string>& flags, const std::string& url,
                     const std::string& output) {
  std::vector<std::string> argv = {"chromium",
                                   "--headless",
                                   "--disable-gpu",
                                   "--no-sandbox",
                                   "--no-first-run",
                                   "--hide-scrollbars",
                                   "--user-data-dir=" + output + ".profile"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back(url);
  {
    testing::Process browser(argv, output);
    EXPECT_EQ(browser.Wait(milliseconds(30'000)), 0) << "chromium did not finish";
  }
  std::filesystem::remove_all(output + ".profile");
  std::ifstream file(output);
  return {std::istreambuf_iterator<char>(file), {}};
}

TEST(StatusPageE2eTest, TheStatusPageInAHeadlessBrowserWhileTrafficFlows) {
  ASSERT_EQ(std::system("command -v chromium >/dev/null"), 0)
      << "chromium is needed: run scripts/bootstrap";
  Upstream upstream;
  Gateway gateway(upstream.port(),
                  "rules:\n"
                  "  - {name: per-ip, key: ip, capacity: 1000, period: 1m}\n"
                  "  - {name: per-key, key: key, capacity: 20, tokens: 10, period: 1s}\n"
                  "  - {name: per-tenant, key: tenant, capacity: 100000, period: 1h}\n"
                  "tenants: {ak_live_browser_key_5555: org_acme}\n");
  const std::string key = "ak_live_browser_key_5555";
  // Quiet first: nothing rejected yet.
  ASSERT_TRUE(WaitUntil(
      [&] {
        return json::parse(
                   Fetch(gateway.admin(), "GET", "/status.json").body)["rules"][1]["series"]["t"]
                   .size() >= 1;
      },
      milliseconds(3000)));
  std::atomic<bool> stop{false};
  std::thread traffic([&] {
    while (!stop) {  // about 60 a second against 10 a second allowed
      gateway.Get("/api", {{"X-Api-Key", key}});
      std::this_thread::sleep_for(milliseconds(15));
    }
  });
  // Until the rejections show in a sample: the rate rises from nothing.
  const bool rising = WaitUntil(
      [&] {
        const json status = json::parse(Fetch(gateway.admin(), "GET", "/status.json").body);
        const json& rejected = status["rules"][1]["series"]["rejected"];
        return rejected.size() >= 3 && rejected.front().get<double>() == 0 &&
               rejected.back().get<double>() > 5;
      },
      milliseconds(8000));
  EXPECT_TRUE(rising);

  const std::string url = "http://127.0.0.1:" + std::to_string(gateway.admin()) + "/";
  const std::string base = "/tmp/sluice-test-status-" + std::to_string(gateway.admin());
  const std::string dom =
      Chromium({"--virtual-time-budget=3000", "--dump-dom"}, url, base + ".dom.html");
  for (const char* rule : {"per-ip", "per-key", "per-tenant"}) {
    EXPECT_NE(dom.find(std::string("data-rule=\"") + rule + "\""), std::string::npos) << rule;
  }
  std::smatch rate;
  ASSERT_TRUE(std::regex_search(
      dom, rate, std::regex("data-rule=\"per-key\" data-rejected-rate=\"([0-9.]+)\"")))
      << dom.substr(0, 4000);
  EXPECT_GT(std::stod(rate[1]), 5.0);
  EXPECT_NE(dom.find("Healthy"), std::string::npos);
  EXPECT_NE(dom.find("ak_liv…"), std::string::npos) << "the rejected key, masked";
  EXPECT_NE(dom.find("org_acme"), std::string::npos) << "the configuration and its tenant";
  EXPECT_EQ(dom.find(key), std::string::npos) << "an API key shown whole";

  const std::string screenshot = std::string(SLUICE_ARTIFACT_DIR) + "/status_page.png";
  std::filesystem::create_directories(SLUICE_ARTIFACT_DIR);
  std::filesystem::remove(screenshot);
  Chromium({"--virtual-time-budget=3000", "--window-size=1280,900", "--screenshot=" + screenshot},
           url, base + ".screenshot.log");
  stop = true;
  traffic.join();
  ASSERT_TRUE(std::filesystem::exists(screenshot));
  EXPECT_GT(std::filesystem::file_size(screenshot), 10'000u);
  std::cout << "status page screenshot: " << screenshot << std::endl;
}

}  // namespace
}  // namespace sluice
