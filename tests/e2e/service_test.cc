// `sluice serve` as systemd runs it: the notifications of a Type=notify unit at start, reload
// and stop, on a socket of the test's standing in for $NOTIFY_SOCKET; and the command's answers
// that need no configuration, or fail for want of one.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <csignal>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <system_error>

#include "e2e/processes.h"

namespace sluice {
namespace {

using e2e::Healthy;
using e2e::StartOnFreePorts;
using std::chrono::milliseconds;
using testing::FreePort;
using testing::Process;

// A datagram socket that receives what the process under test sends to $NOTIFY_SOCKET: at a
// path, or ("@name") in Linux's abstract namespace.
class NotifySocket {
 public:
  explicit NotifySocket(bool abstract) {
    static int count = 0;
    const std::string name =
        "/tmp/sluice-test-notify-" + std::to_string(getpid()) + "-" + std::to_string(++count);
    address_ = abstract ? "@" + name : name;
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, address_.data(), address_.size());
    if (abstract) address.sun_path[0] = '\0';
    const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address_.size());
    if (bind(fd_, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
      ADD_FAILURE() << "cannot bind " << address_ << ": " << std::generic_category().message(errno);
    }
  }
  ~NotifySocket() {
    close(fd_);
    if (address_[0] == '/') unlink(address_.c_str());
  }
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  const std::string& address() const { return address_; }

  // The next datagram, or "" when none comes within `limit`.
  std::string Receive(milliseconds limit) const {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(limit.count())) != 1) return "";
    char buffer[4096];
    const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
    return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : "";
  }

 private:
  std::string address_;
  int fd_ = -1;
};

// An environment variable set while the object lives (the processes started meanwhile inherit
// it).
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const std::string& value) : name_(name) {
    setenv(name, value.c_str(), 1);  // NOLINT(concurrency-mt-unsafe): before the process starts
  }
  ~ScopedEnvironment() { unsetenv(name_); }  // NOLINT(concurrency-mt-unsafe): after it ended
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  const char* name_;
};

// `command` run by the shell: its exit code and what it wrote to standard error alone.
std::pair<int, std::string> RunForStderr(const std::string& command) {
  FILE* pipe = popen(("(" + command + ") 2>&1 >/dev/null").c_str(), "r");
  std::string output;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// `command`'s standard output, and its exit code.
std::pair<int, std::string> RunForStdout(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

class NotifyTest : public ::testing::TestWithParam<bool> {};

INSTANTIATE_TEST_SUITE_P(Sockets, NotifyTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Abstract" : "Path"; });

// What the packaged unit relies on: READY=1 only once the listeners answer, RELOADING=1 and
// READY=1 around a SIGHUP, STOPPING=1 at a SIGTERM's drain. The configuration is the check API
// alone, as the package ships it.
TEST_P(NotifyTest, ReadyOnceListeningReloadingAroundASighupStoppingAtTheDrain) {
  NotifySocket notify(GetParam());
  std::unique_ptr<Process> process;
  std::string first;
  uint16_t admin = 0;
  {
    ScopedEnvironment environment("NOTIFY_SOCKET", notify.address());
    StartOnFreePorts(
        [&]() -> Process& {
          const uint16_t check = FreePort();
          admin = FreePort();
          const std::string path = "/tmp/sluice-test-notify-" + std::to_string(check) + ".yaml";
          std::ofstream(path) << "check_listen: 127.0.0.1:" << check
                              << "\nadmin_listen: 127.0.0.1:" << admin
                              << "\nthreads: 1\nrules: [{name: per-ip, key: ip, capacity: 5, "
                                 "period: 1s}]\n";
          process = std::make_unique<Process>(
              std::vector<std::string>{SLUICE_BINARY, "serve", "--config", path},
              "/tmp/sluice-test-notify-" + std::to_string(check) + ".log");
          return *process;
        },
        [&] {
          first = notify.Receive(milliseconds(0));
          return !first.empty();
        });
  }
  ASSERT_EQ(first, "READY=1");
  EXPECT_TRUE(Healthy(admin)) << "ready before the admin listener answered";

  process->Signal(SIGHUP);
  const std::string reloading = notify.Receive(milliseconds(5000));
  EXPECT_TRUE(reloading.starts_with("RELOADING=1\nMONOTONIC_USEC=")) << reloading;
  EXPECT_EQ(notify.Receive(milliseconds(5000)), "READY=1");

  process->Signal(SIGTERM);
  EXPECT_EQ(notify.Receive(milliseconds(5000)), "STOPPING=1");
  EXPECT_EQ(process->Wait(milliseconds(10'000)), 0);
  EXPECT_EQ(notify.Receive(milliseconds(0)), "");
}

// Under systemd standard error is the journal: a file that cannot be read must be named there,
// with the reason, and the start must fail.
TEST(ServiceTest, AMissingConfigurationFailsTheStartNamingFileAndReason) {
  const auto [code, error] =
      RunForStderr(std::string(SLUICE_BINARY) + " serve --config /nonexistent");
  EXPECT_NE(code, 0);
  EXPECT_NE(error.find("/nonexistent: cannot be read: No such file or directory"),
            std::string::npos)
      << error;
}

TEST(ServiceTest, VersionAndHelpNeedNoConfiguration) {
  const auto [version_code, version] = RunForStdout(std::string(SLUICE_BINARY) + " --version");
  EXPECT_EQ(version_code, 0);
  EXPECT_TRUE(version.starts_with("sluice " SLUICE_PROJECT_VERSION)) << version;
  const auto [help_code, help] = RunForStdout(std::string(SLUICE_BINARY) + " --help");
  EXPECT_EQ(help_code, 0);
  EXPECT_NE(help.find("serve"), std::string::npos) << help;
  EXPECT_NE(help.find("--version"), std::string::npos) << help;
}

}  // namespace
}  // namespace sluice
