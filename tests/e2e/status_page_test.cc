// The admin listener's status page, end to end: in a real headless browser while traffic flows.
// What its endpoints answer, /debug/top and their bad input included, is tested in-process
// (tests/http/gateway_admin_test.cc).
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "e2e/processes.h"
#include "support/load_pacing.h"

namespace sluice {
namespace {

using e2e::GatewayProcess;
using e2e::Upstream;
using e2e::WaitUntil;
using json = nlohmann::json;
using std::chrono::milliseconds;
using testing::Fetch;

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
  // NOLINTNEXTLINE(concurrency-mt-unsafe): before any thread of the test starts
  ASSERT_EQ(std::system("command -v chromium >/dev/null"), 0)
      << "chromium is needed: run scripts/bootstrap";
  Upstream upstream;
  GatewayProcess gateway(upstream.port(),
                         "rules:\n"
                         "  - {name: per-ip, key: ip, capacity: 1000, period: 1m}\n"
                         "  - {name: per-key, key: key, capacity: 20, tokens: 10, period: 1s}\n"
                         "  - {name: per-tenant, key: tenant, capacity: 100000, period: 1h}\n"
                         "tenants: {ak_live_browser_key_5555: org_acme}\n");
  const std::string key = "ak_live_browser_key_5555";
  // Quiet first: nothing rejected yet.
  ASSERT_TRUE(WaitUntil(
      [&] {
        return !json::parse(
                    Fetch(gateway.admin(), "GET", "/status.json").body)["rules"][1]["series"]["t"]
                    .empty();
      },
      milliseconds(3000)));
  std::atomic<bool> stop{false};
  std::thread traffic([&] {
    while (!stop) {  // about 60 a second against 10 a second allowed
      gateway.Get("/api", {{"X-Api-Key", key}});
      testing::PaceLoad(milliseconds(15));
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
