#include "process.h"
#include "support/wait_until.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <string_view>
#include <thread>

#include <gtest/gtest.h>

namespace sluice::testing {

namespace {

// Enough for a sanitizer's report or the last few log lines, not a whole run's log.
constexpr std::streamoff kLogTailBytes = std::streamoff{64} * 1024;

// The first line of each sanitizer's report. A child's report is only in its log: a race or a
// leak in a `sluice serve` that the test stops and never asks about would otherwise go unseen.
constexpr std::string_view kSanitizerReports[] = {
    "WARNING: ThreadSanitizer:", "ERROR: AddressSanitizer:", "ERROR: LeakSanitizer:",
    "runtime error:"};

// Whether a line of the log at `path` starts a sanitizer's report that holds none of
// `false_reports`.
bool HasSanitizerReport(const std::string& path, const std::vector<std::string>& false_reports) {
  std::ifstream log(path, std::ios::binary);
  const auto contains = [](const std::string& line, std::string_view text) {
    return line.find(text) != std::string::npos;
  };
  for (std::string line; std::getline(log, line);) {
    const bool report = std::any_of(std::begin(kSanitizerReports), std::end(kSanitizerReports),
                                    [&](std::string_view r) { return contains(line, r); });
    const bool known_false = std::any_of(false_reports.begin(), false_reports.end(),
                                         [&](const std::string& f) { return contains(line, f); });
    if (report && !known_false) return true;
  }
  return false;
}

void PrintLogTail(const std::string& path) {
  std::ifstream log(path, std::ios::binary | std::ios::ate);
  if (!log) return;
  const std::streamoff size = log.tellg();
  log.seekg(std::max<std::streamoff>(0, size - kLogTailBytes));
  std::cerr << "--- the end of " << path << ":\n"
            << std::string(std::istreambuf_iterator<char>(log), {}) << "--- end\n";
}

}  // namespace

Process::Process(std::vector<std::string> argv, const std::string& log_path,
                 const std::string& user)
    : log_path_(log_path) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const passwd* account = nullptr;
  if (!user.empty() && ::geteuid() == 0) {
    account = ::getpwnam(user.c_str());
    if (account == nullptr) throw std::runtime_error("no user " + user + " to run " + argv[0]);
  }
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("cannot fork");
  if (pid_ == 0) {
    if (account != nullptr && (::setgroups(0, nullptr) != 0 || ::setgid(account->pw_gid) != 0 ||
                               ::setuid(account->pw_uid) != 0)) {
      _exit(126);
    }
    // After the change of user, which clears it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int null = open("/dev/null", O_RDONLY);
    int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(null, STDIN_FILENO);
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    execvp(args[0], args.data());
    _exit(127);
  }
}

Process::~Process() {
  if (pid_ > 0) {
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (HasSanitizerReport(log_path_, false_reports_))
    ADD_FAILURE() << "a sanitizer reported in " << log_path_;
  if (::testing::Test::HasFailure()) PrintLogTail(log_path_);
}

void Process::Signal(int signal) const {
  if (pid_ > 0) ::kill(pid_, signal);
}

std::optional<int> Process::Wait(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return std::nullopt;
  int status = 0;
  if (!WaitUntil([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, timeout)) {
    return std::nullopt;
  }
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace sluice::testing
