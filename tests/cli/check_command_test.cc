// `sluice check`'s store flags, read as the configuration's `store:` and `quota_store:` fields
// are: what they name is decided, and what they cannot name is refused with the reason, at once.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "support/process.h"

namespace sluice {
namespace {

struct Outcome {
  std::optional<int> exit_code;  // none: still running after the wait
  std::string output;
};

// `sluice check ARGS...`, its exit code and what it printed.
Outcome Check(const std::vector<std::string>& args) {
  const std::string log = ::testing::TempDir() + "sluice_check_" +
                          ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".log";
  std::vector<std::string> argv = {SLUICE_BINARY, "check"};
  argv.insert(argv.end(), args.begin(), args.end());
  Outcome outcome;
  {
    testing::Process process(argv, log);
    outcome.exit_code = process.Wait(std::chrono::seconds(20));
  }
  std::ifstream in(log);
  std::ostringstream text;
  text << in.rdbuf();
  outcome.output = text.str();
  return outcome;
}

// Refused, quickly, with `reason` in what it printed.
void ExpectRefused(const std::vector<std::string>& args, const std::string& reason) {
  const Outcome outcome = Check(args);
  ASSERT_TRUE(outcome.exit_code.has_value()) << "still running: " << outcome.output;
  EXPECT_NE(*outcome.exit_code, 0) << outcome.output;
  EXPECT_NE(outcome.output.find(reason), std::string::npos) << outcome.output;
}

const std::vector<std::string> kRule = {"--rule", "per-key:key:2:2:1m", "--attr", "key=ak_1"};

std::vector<std::string> With(std::vector<std::string> args) {
  args.insert(args.end(), kRule.begin(), kRule.end());
  return args;
}

TEST(CheckCommandTest, TheMemoryStoreDecides) {
  const Outcome outcome = Check(With({"--store", "memory", "--count", "3"}));
  ASSERT_EQ(outcome.exit_code, 0) << outcome.output;
  EXPECT_NE(outcome.output.find("2 allow per-key=ok/0"), std::string::npos) << outcome.output;
  EXPECT_NE(outcome.output.find("3 reject per-key=no/0"), std::string::npos) << outcome.output;
}

TEST(CheckCommandTest, AStoreNoKindAnswersToIsRefusedNamingTheKindsThatDo) {
  ExpectRefused(With({"--store", "memcached://127.0.0.1:11211"}),
                "--store \"memcached://127.0.0.1:11211\": expected one of memory, redis://..., "
                "rediss://..., unix://..., sentinel://..., cluster://...");
}

TEST(CheckCommandTest, TheFlagsAreRefusedAsTheSameFieldsOfAConfigurationAre) {
  ExpectRefused(With({"--store", "redis://127.0.0.1:6379", "--tls-ca", "ca.pem"}),
                "tls: applies to rediss:// URLs (TLS); this url is not one");
  ExpectRefused(With({"--store", "memory", "--password-file", "/run/secrets/redis"}),
                "password_file: applies only to a redis, sentinel or cluster store");
  ExpectRefused(With({"--store", "redis://127.0.0.1:6379", "--timeout", "0ms"}),
                "timeout: must be more than 0");
  ExpectRefused(With({"--store", "sentinel://10.0.0.1:26379"}), "a sentinel URL names the master");
  ExpectRefused(With({"--store", "cluster://127.0.0.1"}), "an address must be host:port");
}

TEST(CheckCommandTest, AQuotaStoreNoKindAnswersToIsRefused) {
  ExpectRefused(With({"--durable", "per-key", "--quota-store", "mysql://db/quotas"}),
                "--quota-store \"mysql://db/quotas\": expected one of postgresql://..., "
                "postgres://...");
  ExpectRefused(With({"--durable", "per-key", "--quota-store", "postgresql://db/q",
                      "--quota-timeout", "0ms"}),
                "timeout: must be more than 0");
}

}  // namespace
}  // namespace sluice
