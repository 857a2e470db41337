// `sluice serve` on stores that refuse it: a wrong password, a certificate that fails
// verification. Whatever goes wrong, the password appears nowhere (logs, check-config, answers,
// /metrics) and the store's address only in the log; credentials rotate at SIGHUP.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "e2e/processes.h"
#include "support/redis_server.h"
#include "support/tls_certificates.h"

namespace sluice {
namespace {

using e2e::CheckConfig;
using e2e::GatewayProcess;
using e2e::Upstream;
using e2e::WaitUntil;
using std::chrono::milliseconds;
using testing::Fetch;
using testing::HttpResult;
using testing::RedisServer;
using testing::TlsCertificates;

constexpr const char* kPassword = "s3cret-Pa55word-e2e";
constexpr const char* kWrongPassword = "wr0ng-Pa55word-e2e";

// Everything `body` of a configuration answers through each of the gateway's front ends.
std::vector<std::string> Answers(const GatewayProcess& gateway, uint16_t rls_json) {
  std::vector<std::string> answers;
  auto keep = [&](const HttpResult& r) {
    std::string all = std::to_string(r.status) + "\n";
    for (const auto& [name, value] : r.headers) all.append(name).append(": ").append(value) += "\n";
    answers.push_back(all + r.body);
  };
  keep(gateway.Get("/api/x", {{"X-Api-Key", "ak_1"}}));
  keep(Fetch(gateway.check(), "POST", "/v1/check", {}, R"({"attributes": {"key": "ak_1"}})"));
  keep(Fetch(gateway.check(), "GET", "/v1/auth", {{"X-Api-Key", "ak_1"}}));
  keep(Fetch(rls_json, "POST", "/json", {{"Content-Type", "application/json"}},
             R"({"domain": "edge", "descriptors": [{"entries": [{"key": "k", "value": "v"}]}]})"));
  keep(Fetch(gateway.admin(), "GET", "/readyz"));
  keep(Fetch(gateway.admin(), "GET", "/metrics"));
  return answers;
}

// A gateway (proxy, check API, RLS on JSON) on `store`, failing closed.
class GatewayOn {
 public:
  GatewayOn(const std::string& store, const std::string& rls_failure = "error")
      : store_(store),
        rls_failure_(rls_failure),
        descriptors_(std::filesystem::temp_directory_path() /
                     ("sluice-secrets-" + std::to_string(testing::FreePort()))),
        rls_json_(testing::FreePort()),
        gateway_(upstream_.port(), Body(store, rls_failure)) {}
  ~GatewayOn() { std::filesystem::remove_all(descriptors_); }

  GatewayProcess& gateway() { return gateway_; }
  uint16_t rls_json() const { return rls_json_; }

  // Rewrites the configuration file (for SIGHUP) with `extra` after the rest.
  void Rewrite(const std::string& extra) {
    gateway_.Write(upstream_.port(), Body(store_, rls_failure_) + extra);
  }
  std::vector<std::string> Answers() const { return sluice::Answers(gateway_, rls_json_); }

 private:
  std::string Body(const std::string& store, const std::string& rls_failure) {
    std::filesystem::create_directories(descriptors_);
    std::ofstream(descriptors_ / "edge.yaml")
        << "domain: edge\ndescriptors:\n  - key: k\n"
           "    rate_limit: {unit: minute, requests_per_unit: 5}\n";
    return store + "failure: closed\n" +
           "rules:\n  - {name: per-key, key: key, capacity: 5, period: 1m}\n"
           "rls: {json_listen: 127.0.0.1:" +
           std::to_string(rls_json_) + ", config: [" + descriptors_.string() +
           "/], failure: " + rls_failure + "}\n";
  }

  std::string store_;
  std::string rls_failure_;
  std::filesystem::path descriptors_;
  uint16_t rls_json_;
  Upstream upstream_;
  GatewayProcess gateway_;
};

// The answers to clients: all but /metrics, which is on the admin listener for operators and
// names store nodes by address (never by a credential).
std::vector<std::string> ToClients(std::vector<std::string> answers) {
  answers.pop_back();
  return answers;
}

void ExpectNowhere(const std::vector<std::string>& answers, const std::string& secret) {
  for (const std::string& answer : answers) {
    EXPECT_EQ(answer.find(secret), std::string::npos) << "\"" << secret << "\" in " << answer;
  }
}

TEST(StoreSecretsE2eTest, AWrongPasswordShowsNowhereAndTheAddressOnlyInTheLog) {
  RedisServer redis({"--requirepass", kPassword});
  // NOLINTNEXTLINE(concurrency-mt-unsafe): the environment changes before the process starts
  ::setenv("SLUICE_TEST_REDIS_PASSWORD", kWrongPassword, 1);
  GatewayOn on("store: {type: redis, url: 'redis://127.0.0.1:" + std::to_string(redis.port()) +
               "', password: '${SLUICE_TEST_REDIS_PASSWORD}', timeout: 200ms}\n");
  const std::string address = "127.0.0.1:" + std::to_string(redis.port());
  std::vector<std::string> answers = on.Answers();
  EXPECT_TRUE(answers[0].starts_with("503")) << answers[0];
  EXPECT_NE(answers[0].find("rate limit store unavailable"), std::string::npos) << answers[0];
  EXPECT_NE(answers[1].find("rate limit store unavailable"), std::string::npos) << answers[1];
  EXPECT_TRUE(answers[3].starts_with("503")) << answers[3];
  EXPECT_TRUE(answers[4].starts_with("503")) << answers[4];  // /readyz
  ExpectNowhere(answers, kWrongPassword);
  ExpectNowhere(answers, kPassword);
  ExpectNowhere(ToClients(answers), address);
  const std::string log = on.gateway().Log();
  EXPECT_NE(log.find(address), std::string::npos) << log;  // the operator's clue
  EXPECT_NE(log.find("WRONGPASS"), std::string::npos) << log;
  ExpectNowhere({log}, kWrongPassword);
  const std::string checked = CheckConfig(on.gateway().ConfigPath());
  ExpectNowhere({checked}, kWrongPassword);
  ::unsetenv("SLUICE_TEST_REDIS_PASSWORD");  // NOLINT(concurrency-mt-unsafe): its processes ended
}

TEST(StoreSecretsE2eTest, AnUnsetVariableIsRefusedByName) {
  const std::string path = std::filesystem::temp_directory_path() /
                           ("sluice-unset-" + std::to_string(testing::FreePort()) + ".yaml");
  ::unsetenv("SLUICE_TEST_UNSET");  // NOLINT(concurrency-mt-unsafe): before the process starts
  std::ofstream(path) << "rls: {json_listen: 127.0.0.1:1, config: [/nonexistent/]}\n"
                         "store: {type: redis, url: 'redis://127.0.0.1:1',\n"
                         "        password: '${SLUICE_TEST_UNSET}'}\n";
  const std::string checked = CheckConfig(path);
  EXPECT_NE(checked.find(path + ":3"), std::string::npos) << checked;
  EXPECT_NE(checked.find("SLUICE_TEST_UNSET"), std::string::npos) << checked;
  std::filesystem::remove(path);
}

bool Checked(const GatewayProcess& gateway) {
  return Fetch(gateway.check(), "POST", "/v1/check", {}, R"({"attributes": {"key": "ak_r"}})")
             .status == 200;
}

// A password file for `redis`, holding `password`.
std::string PasswordFile(const RedisServer& redis, const std::string& password) {
  std::string file =
      std::filesystem::temp_directory_path() / ("sluice-password-" + std::to_string(redis.port()));
  std::ofstream(file) << password << "\n";
  return file;
}

// The `store` of a gateway on `redis` that reads its password from `file`.
std::string StoreWithPasswordFile(const RedisServer& redis, const std::string& file) {
  return "store: {type: redis, url: 'redis://127.0.0.1:" + std::to_string(redis.port()) +
         "', password_file: " + file + ", timeout: 200ms}\n";
}

TEST(StoreSecretsE2eTest, APasswordFileRotatesAtSighup) {
  RedisServer redis({"--requirepass", "first-password"});
  const std::string file = PasswordFile(redis, "first-password");
  GatewayOn on(StoreWithPasswordFile(redis, file));
  ASSERT_TRUE(WaitUntil([&] { return Checked(on.gateway()); }, milliseconds(3000)));
  auto client = redis.Client();
  client->Command({"AUTH", "first-password"});
  client->Command({"CONFIG", "SET", "requirepass", "second-password"});
  client->Command({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  EXPECT_TRUE(WaitUntil([&] { return !Checked(on.gateway()); }, milliseconds(2000)));
  std::ofstream(file) << "second-password\n";
  on.gateway().process().Signal(SIGHUP);
  EXPECT_TRUE(WaitUntil([&] { return Checked(on.gateway()); }, milliseconds(5000)));
  // A file that cannot be read at SIGHUP is refused, and the password read before is kept.
  std::filesystem::remove(file);
  on.gateway().process().Signal(SIGHUP);
  EXPECT_TRUE(WaitUntil([&] { return on.gateway().Log().find(file) != std::string::npos; },
                        milliseconds(3000)))
      << on.gateway().Log();
  client->Command({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  EXPECT_TRUE(WaitUntil([&] { return Checked(on.gateway()); }, milliseconds(5000)));
  const std::string log = on.gateway().Log();
  ExpectNowhere({log}, "first-password");
  ExpectNowhere({log}, "second-password");
}

// Whether a check of a key never checked before was answered from the store.
bool FreshKeyChecked(const GatewayProcess& gateway) {
  static int keys = 0;
  const std::string body = R"({"attributes": {"key": "fresh-)" + std::to_string(++keys) + "\"}}";
  return Fetch(gateway.check(), "POST", "/v1/check", {}, body).status == 200;
}

// Kills the gateway's connections through `admin` (a client of the server, authenticated), and
// waits until a new connection answers a check: whether one that authenticates was made.
bool ReconnectedAndChecked(testing::RedisClient& admin, const GatewayProcess& gateway) {
  admin.Command({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  return WaitUntil([&] { return FreshKeyChecked(gateway); }, milliseconds(5000));
}

TEST(StoreSecretsE2eTest, ARefusedReloadKeepsTheOldPasswordForNewConnections) {
  RedisServer redis({"--requirepass", "old-password"});
  const std::string file = PasswordFile(redis, "old-password");
  GatewayOn on(StoreWithPasswordFile(redis, file));
  ASSERT_TRUE(WaitUntil([&] { return FreshKeyChecked(on.gateway()); }, milliseconds(3000)));
  auto client = redis.Client();
  client->Command({"AUTH", "old-password"});
  // The password file changes, but the same reload changes a field that needs a restart.
  std::ofstream(file) << "new-password\n";
  on.Rewrite("max_body_bytes: 100\n");
  on.gateway().process().Signal(SIGHUP);
  ASSERT_TRUE(WaitUntil([&] { return e2e::Reloads(on.gateway().admin(), "failure") == 1; },
                        milliseconds(5000)));
  EXPECT_NE(on.gateway().Log().find("reload refused: max_body_bytes needs a restart"),
            std::string::npos);
  // The server accepts only the old password: new connections that check use it.
  EXPECT_TRUE(ReconnectedAndChecked(*client, on.gateway()));
  // A valid reload puts the new password in force, which is then the only one the server takes.
  client->Command({"CONFIG", "SET", "requirepass", "new-password"});
  on.Rewrite("");
  on.gateway().process().Signal(SIGHUP);
  ASSERT_TRUE(WaitUntil([&] { return e2e::Reloads(on.gateway().admin(), "success") == 1; },
                        milliseconds(5000)));
  EXPECT_TRUE(ReconnectedAndChecked(*client, on.gateway()));
}

TEST(StoreSecretsE2eTest, ACertificateThatFailsVerificationIsNotReadyAndLogged) {
  const TlsCertificates& certificates = TlsCertificates::Shared();
  const uint16_t tls_port = testing::FreePort();
  RedisServer redis(certificates.ServerArgs(tls_port));
  GatewayOn on("store: {type: redis, url: 'rediss://127.0.0.1:" + std::to_string(tls_port) +
               "', timeout: 200ms, tls: {ca_file: " + certificates.other_ca() + "}}\n");
  std::vector<std::string> answers = on.Answers();
  EXPECT_TRUE(answers[0].starts_with("503")) << answers[0];  // failing closed
  EXPECT_TRUE(answers[4].starts_with("503")) << answers[4];  // /readyz
  ExpectNowhere(ToClients(answers), "127.0.0.1:" + std::to_string(tls_port));
  EXPECT_NE(on.gateway().Log().find("the server's certificate is refused"), std::string::npos)
      << on.gateway().Log();
}

TEST(StoreSecretsE2eTest, VerifyFalseWarnsAtStart) {
  const TlsCertificates& certificates = TlsCertificates::Shared();
  const uint16_t tls_port = testing::FreePort();
  RedisServer redis(certificates.ServerArgs(tls_port));
  GatewayOn on("store: {type: redis, url: 'rediss://127.0.0.1:" + std::to_string(tls_port) +
               "', timeout: 200ms, tls: {verify: false}}\n");
  EXPECT_TRUE(WaitUntil([&] { return Checked(on.gateway()); }, milliseconds(3000)));
  const std::string log = on.gateway().Log();
  EXPECT_NE(log.find("tls.verify is false"), std::string::npos) << log;
}

}  // namespace
}  // namespace sluice
