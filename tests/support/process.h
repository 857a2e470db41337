// A child process for tests: started with its output in a log file, killed if still running
// when the object goes, and never outliving the test binary. When the test has failed by then,
// the log's end is printed with the failure: CI keeps nothing else of a process that crashed.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace sluice::testing {

class Process {
 public:
  // Starts `argv` (argv[0] found on PATH or a path); stdout and stderr go to `log_path`. With a
  // `user`, when the tests run as root, the child runs as that user (its uid and gid, no other
  // groups; throws std::runtime_error when there is no such user): for servers that refuse root.
  Process(std::vector<std::string> argv, const std::string& log_path, const std::string& user = "");
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  void Signal(int signal) const;
  // Waits for the process to exit; its exit code, or nullopt on timeout (it keeps running).
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // A sanitizer's report in the log fails the test when the object goes, unless its line holds
  // one of these texts: a report known to be false for this process.
  void IgnoreFalseSanitizerReport(std::string text) { false_reports_.push_back(std::move(text)); }

 private:
  std::string log_path_;
  std::vector<std::string> false_reports_;
  pid_t pid_ = -1;
};

}  // namespace sluice::testing
