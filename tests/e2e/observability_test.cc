// What operators see of a running `sluice serve`: /metrics as promtool reads it, the rate limit
// service's per-limit statistics, reloads counted, and the access log written and rotated.
#include <gtest/gtest.h>
#include <csignal>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "e2e/processes.h"
#include "sluice/version.h"

namespace sluice {
namespace {

using e2e::GatewayProcess;
using e2e::MetricValue;
using e2e::Upstream;
using e2e::WaitUntil;
using std::chrono::milliseconds;
using testing::Fetch;
using testing::FreePort;
using testing::RedisServer;

std::string RedisStore(const RedisServer& redis, const std::string& password = "") {
  const std::string auth = password.empty() ? "" : ":" + password + "@";
  return "store: {type: redis, url: 'redis://" + auth +
         "127.0.0.1:" + std::to_string(redis.port()) + "/0', timeout: 200ms}\n";
}

// What promtool says of `text` (its exit status, then its output), piped through a file.
std::pair<int, std::string> Promtool(const std::string& text) {
  const std::string path = "/tmp/sluice-test-metrics-" + std::to_string(FreePort()) + ".txt";
  std::ofstream(path) << text;
  const std::string command = "promtool check metrics < " + path + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, n);
  const int status = pclose(pipe);
  std::filesystem::remove(path);
  return {WEXITSTATUS(status), output};
}

// The sum of every series of `family` in `text`.
double Sum(const std::string& text, const std::string& family) {
  std::istringstream lines(text);
  double sum = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.compare(0, family.size() + 1, family + "{") == 0 ||
        line.compare(0, family.size() + 1, family + " ") == 0) {
      sum += std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return sum;
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  return {std::istreambuf_iterator<char>(file), {}};
}

size_t Lines(const std::string& path) {
  const std::string text = ReadFile(path);
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

// A gateway with rules and the rate limit service's JSON API in one process, on a Redis with a
// password: every family of both is on its /metrics.
class MetricsE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    descriptors_ = "/tmp/sluice-test-descriptors-" + std::to_string(FreePort()) + ".yaml";
    std::ofstream(descriptors_) << "domain: edge\n"
                                   "descriptors:\n"
                                   "  - key: remote_address\n"
                                   "    rate_limit: {unit: hour, requests_per_unit: 10}\n"
                                   "  - key: route\n"
                                   "    value: /login\n"
                                   "    descriptors:\n"
                                   "      - key: user\n"
                                   "        shadow_mode: true\n"
                                   "        rate_limit: {unit: hour, requests_per_unit: 2}\n"
                                   "  - key: client\n"
                                   "    rate_limit: {unit: hour, requests_per_unit: 5, name: "
                                   "per-client}\n";
    json_ = FreePort();
    gateway_ = std::make_unique<GatewayProcess>(
        upstream_.port(), RedisStore(redis_, kPassword) +
                              "rules:\n  - {name: per-key, key: key, capacity: 5, period: 1h}\n"
                              "rls:\n  json_listen: 127.0.0.1:" +
                              std::to_string(json_) + "\n  config: [" + descriptors_ + "]\n");
  }
  void TearDown() override { std::filesystem::remove(descriptors_); }

  int Rls(const std::string& entries) const {
    return Fetch(json_, "POST", "/json", {},
                 R"({"domain": "edge", "descriptors": [{"entries": [)" + entries + "]}]}")
        .status;
  }

  std::string Metrics() const { return Fetch(gateway_->admin(), "GET", "/metrics").body; }

  static constexpr const char* kPassword = "s3cret-pass";
  RedisServer redis_{{"--requirepass", kPassword}};
  Upstream upstream_;
  std::string descriptors_;
  uint16_t json_ = 0;
  std::unique_ptr<GatewayProcess> gateway_;
};

TEST_F(MetricsE2eTest, PromtoolFindsNothingToSayOfTheGatewaysAndTheRlsMetrics) {
  for (int i = 0; i < 7; ++i) gateway_->Get("/", {{"X-Api-Key", "k"}});
  Rls(R"({"key": "remote_address", "value": "203.0.113.1"})");
  const std::string metrics = Metrics();
  const auto [status, output] = Promtool(metrics);
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output, "") << metrics;
  EXPECT_EQ(MetricValue(metrics, std::string("sluice_build_info{version=\"") +
                                     SLUICE_VERSION_STRING + "\"}"),
            1)
      << metrics;
  const std::string node = "node=\"127.0.0.1:" + std::to_string(redis_.port()) + "\"";
  EXPECT_EQ(MetricValue(metrics, "sluice_store_up{" + node + "}"), 1) << metrics;
  // Seven checks and one RLS call, each one round trip.
  EXPECT_EQ(MetricValue(metrics, "sluice_store_round_trip_duration_seconds_count{" + node + "}"), 8)
      << metrics;
  // Five allowed of a capacity of 5: the fifth is past 4 (0.8 of 5).
  EXPECT_EQ(MetricValue(metrics, R"(sluice_near_limit_total{rule="per-key"})"), 1) << metrics;
  EXPECT_EQ(metrics.find(kPassword), std::string::npos) << "a secret in /metrics";
}

TEST_F(MetricsE2eTest, TheStoreDownIsAGaugeOfZeroAndTheFailurePolicysDecisionsAreCounted) {
  redis_.Kill();
  EXPECT_TRUE(WaitUntil(
      [&] {
        const std::string node = "node=\"127.0.0.1:" + std::to_string(redis_.port()) + "\"";
        return MetricValue(Metrics(), "sluice_store_up{" + node + "}") == 0;
      },
      milliseconds(3000)));
  EXPECT_EQ(Rls(R"({"key": "remote_address", "value": "203.0.113.1"})"), 200);  // failure: open
  const std::string metrics = Metrics();
  EXPECT_EQ(MetricValue(metrics, R"(sluice_rls_failure_policy_total{decision="allowed"})"), 1)
      << metrics;
  // Unavailable, or past the timeout while a connection is being tried again.
  EXPECT_EQ(Sum(metrics, "sluice_rls_store_errors_total"), 1) << metrics;
  EXPECT_EQ(MetricValue(metrics, R"(sluice_rls_hits_total{domain="edge",limit="remote_address"})"),
            1);
  EXPECT_EQ(Promtool(metrics).first, 0);
}

// envoyproxy/ratelimit's counts: of 12 hits on a limit of 10 (near-limit threshold 8), 10 are
// within it, the 9th and 10th near it, 2 over it.
TEST_F(MetricsE2eTest, RlsCountsEachLimitAsEnvoysRateLimitDoes) {
  for (int i = 0; i < 12; ++i) Rls(R"({"key": "remote_address", "value": "203.0.113.1"})");
  for (int i = 0; i < 3; ++i)
    Rls(R"({"key": "route", "value": "/login"}, {"key": "user", "value": "alice"})");
  Rls(R"({"key": "client", "value": "c1"})");
  const std::string m = Metrics();
  const std::string address = R"({domain="edge",limit="remote_address"})";
  EXPECT_EQ(MetricValue(m, "sluice_rls_hits_total" + address), 12) << m;
  EXPECT_EQ(MetricValue(m, "sluice_rls_within_limit_total" + address), 10) << m;
  EXPECT_EQ(MetricValue(m, "sluice_rls_near_limit_total" + address), 2) << m;
  EXPECT_EQ(MetricValue(m, "sluice_rls_over_limit_total" + address), 2) << m;
  // A shadow limit of 2, hit 3 times: over once, counted in shadow mode, answered OK.
  const std::string login = R"({domain="edge",limit="route_/login.user"})";
  EXPECT_EQ(MetricValue(m, "sluice_rls_over_limit_total" + login), 1) << m;
  EXPECT_EQ(MetricValue(m, "sluice_rls_shadow_mode_total" + login), 1) << m;
  EXPECT_EQ(m.find("alice"), std::string::npos) << "a request's value became a label";
  EXPECT_EQ(MetricValue(m, R"(sluice_rls_within_limit_total{domain="edge",limit="per-client"})"),
            1);
}

TEST_F(MetricsE2eTest, ReloadsAreCountedWithTheTimeOfTheLastSuccess) {
  const double started =
      MetricValue(Metrics(), "sluice_config_last_reload_success_timestamp_seconds");
  EXPECT_GT(started, 1.6e9);
  // The reload's timestamp comes from the wall clock of another process: the test waits until
  // that clock has passed the first one's.
  ASSERT_TRUE(WaitUntil(
      [&] {
        return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                   .count() > started + 0.01;
      },
      milliseconds(1000)));
  gateway_->process().Signal(SIGHUP);  // the same file: taken
  EXPECT_TRUE(WaitUntil(
      [&] {
        return MetricValue(Metrics(), R"(sluice_config_reloads_total{result="success"})") == 1;
      },
      milliseconds(3000)));
  EXPECT_GT(MetricValue(Metrics(), "sluice_config_last_reload_success_timestamp_seconds"), started);
  std::ofstream(gateway_->ConfigPath(), std::ios::app) << "no_such_field: 1\n";
  gateway_->process().Signal(SIGHUP);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return MetricValue(Metrics(), R"(sluice_config_reloads_total{result="failure"})") == 1;
      },
      milliseconds(3000)));
}

TEST(AccessLogE2eTest, LinesAreWrittenAndTheFileReopenedOnSighup) {
  Upstream upstream;
  const std::string path = "/tmp/sluice-test-access-" + std::to_string(FreePort()) + ".log";
  GatewayProcess gateway(upstream.port(),
                         "access_log: {path: " + path +
                             "}\nrules:\n  - {name: per-key, key: key, capacity: 2, "
                             "period: 1h}\n");
  for (int i = 0; i < 3; ++i) gateway.Get("/a?token=hidden", {{"X-Api-Key", "k"}});
  ASSERT_TRUE(WaitUntil([&] { return Lines(path) == 3; }, milliseconds(3000))) << ReadFile(path);
  const std::string first = ReadFile(path);
  EXPECT_NE(first.find(R"("decision":"allowed","method":"GET","path":"/a","status":200)"),
            std::string::npos)
      << first;
  EXPECT_NE(first.find(R"("decision":"rejected","method":"GET","path":"/a","rule":"per-key")"),
            std::string::npos)
      << first;
  EXPECT_NE(first.find(R"("client":"127.0.0.1")"), std::string::npos) << first;
  EXPECT_NE(first.find(R"("store_seconds":)"), std::string::npos) << first;
  EXPECT_EQ(first.find("hidden"), std::string::npos) << "the query string was logged";
  // Rotation: the file is renamed, and after SIGHUP new lines go to a new file by the old name.
  std::filesystem::rename(path, path + ".1");
  gateway.process().Signal(SIGHUP);
  EXPECT_TRUE(WaitUntil([&] { return std::filesystem::exists(path); }, milliseconds(3000)));
  gateway.Get("/b", {{"X-Api-Key", "other"}});
  EXPECT_TRUE(WaitUntil([&] { return Lines(path) == 1; }, milliseconds(3000))) << ReadFile(path);
  EXPECT_EQ(Lines(path + ".1"), 3u);
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".1");
}

}  // namespace
}  // namespace sluice
