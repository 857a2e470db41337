// The `sluice` command's quotas on the shared PostgreSQL: several `sluice check` processes on one
// quota, and `sluice quota` for support teams.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "support/postgres_server.h"
#include "support/process.h"

namespace sluice::testing {
namespace {

using std::chrono::milliseconds;

TEST(QuotaCommandTest, SeveralProcessesNeverTakeMoreThanTheQuota) {
  constexpr int kProcesses = 4;
  constexpr int kEach = 60;
  std::vector<std::unique_ptr<Process>> checks;
  for (int i = 0; i < kProcesses; ++i) {
    const std::string log = "/tmp/sluice-test-quota-check-" + std::to_string(::getpid()) + "-" +
                            std::to_string(i) + ".log";
    checks.push_back(std::make_unique<Process>(
        std::vector<std::string>{SLUICE_BINARY, "check", "--quota-store", SharedPostgres().Url(),
                                 "--quota-password-file", SharedPostgres().PasswordFile(), "--rule",
                                 "processes:tenant:150:150:month", "--durable", "processes",
                                 "--attr", "tenant=org_processes", "--count", std::to_string(kEach),
                                 "--quota-timeout", "2s"},
        log));
  }
  int allowed = 0;
  for (int i = 0; i < kProcesses; ++i) {
    ASSERT_EQ(checks[i]->Wait(milliseconds(60'000)), 0);
    std::ifstream log("/tmp/sluice-test-quota-check-" + std::to_string(::getpid()) + "-" +
                      std::to_string(i) + ".log");
    for (std::string line; std::getline(log, line);) {
      if (std::regex_search(line, std::regex("^\\d+ allow "))) ++allowed;
      EXPECT_EQ(line.find("unchecked"), std::string::npos) << line;
    }
  }
  EXPECT_EQ(allowed, 150);
  // A rule's quotas are under its bucket family: the attribute's name unless `bucket` says.
  EXPECT_EQ(SharedPostgres().Sql("SELECT sum(used) FROM sluice_quota WHERE bucket = 'tenant' AND "
                                 "value = convert_to('org_processes', 'UTF8')"),
            "150");
}

// `sluice quota ARGS...` with a configuration naming the shared server: its output.
std::string Quota(const std::vector<std::string>& args, int expect_exit = 0) {
  const std::string config = "/tmp/sluice-test-quota-cli-" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(config) << "check_listen: 127.0.0.1:1\n"
                        << SharedPostgres().QuotaStoreYaml()
                        << "rules:\n"
                           "  - {name: support, key: tenant, capacity: 1000, period: month, "
                           "durable: true, overrides: {org_big: {capacity: 5000}}}\n"
                           "  - {name: fast, key: key, capacity: 5, period: 1s}\n";
  std::vector<std::string> argv = {SLUICE_BINARY, "quota"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--config", config});
  const std::string log = config + ".out";
  Process quota(argv, log);
  EXPECT_EQ(quota.Wait(milliseconds(15'000)), expect_exit);
  std::ifstream text(log);
  return {std::istreambuf_iterator<char>(text), {}};
}

TEST(QuotaCommandTest, SupportTeamsGetSetAndResetAQuota) {
  EXPECT_NE(Quota({"init"}).find("the quota table and functions are in place"), std::string::npos);
  std::string out = Quota({"get", "--rule", "support", "--value", "org_cli"});
  EXPECT_TRUE(std::regex_search(
      out, std::regex(
               "^used=0 limit=1000 remaining=1000 "
               "window_start=\\d{4}-\\d\\d-01T00:00:00Z window_end=\\d{4}-\\d\\d-01T00:00:00Z\n$")))
      << out;
  out = Quota({"set", "--rule", "support", "--value", "org_cli", "--used", "990"});
  EXPECT_EQ(out.substr(0, 35), "used=990 limit=1000 remaining=10 wi");
  EXPECT_EQ(Quota({"get", "--rule", "support", "--value", "org_big"}).substr(0, 30),
            "used=0 limit=5000 remaining=50");
  out = Quota({"reset", "--rule", "support", "--value", "org_cli"});
  EXPECT_EQ(out.substr(0, 33), "used=0 limit=1000 remaining=1000 ");
  EXPECT_NE(Quota({"get", "--rule", "fast", "--value", "x"}, 1).find("is not durable"),
            std::string::npos);
  EXPECT_NE(Quota({"get", "--rule", "nope", "--value", "x"}, 1).find("no rule is named"),
            std::string::npos);
}

}  // namespace
}  // namespace sluice::testing
