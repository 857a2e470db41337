// The optional access log: one line per request, handed to a writer thread through a bounded
// queue, so that no request ever waits on the disk. When the queue is full the line is dropped
// and counted. Reopen() (at SIGHUP) makes the writer open the path again, for log rotation.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "config/config.h"
#include "sluice/mutex.h"
#include "sluice/status.h"
#include "sluice/thread_annotations.h"

namespace sluice::http {

// What one request's line says.
struct AccessEntry {
  double time = 0;          // seconds since the epoch, when the answer was ready
  std::string_view client;  // the client's address as the gateway identified it
  std::string_view method;
  std::string_view path;  // without the query string, which may carry secrets
  unsigned status = 0;
  std::string_view decision;  // "allowed", "rejected", "failure_allowed", ...
  std::string_view rule;      // the rule that decided a rejection; empty otherwise
  double store_seconds = 0;   // the check's round trip to the store
};

// The line for `entry`, newline included: a JSON object, or space-separated fields (the path
// last, quoted) for `kText`.
std::string FormatAccessLine(const AccessEntry& entry, config::AccessLogConfig::Format format);

class AccessLog {
 public:
  // Opens (creating, appending) the file and starts the writer; fails when it cannot be opened.
  static Result<std::unique_ptr<AccessLog>> Open(const config::AccessLogConfig& config);

  // Writes what is queued, then stops the writer.
  ~AccessLog();
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  const config::AccessLogConfig& config() const { return config_; }

  // Queues `entry`'s line, or drops it when `buffer_lines` are waiting already. Never waits for
  // the disk; thread-safe.
  void Write(const AccessEntry& entry) SLUICE_EXCLUDES(mutex_);

  // The writer opens the path again before its next write: the old file may have been renamed.
  void Reopen() SLUICE_EXCLUDES(mutex_);

  uint64_t Dropped() const { return dropped_.load(std::memory_order_relaxed); }
  uint64_t WriteErrors() const { return write_errors_.load(std::memory_order_relaxed); }

 private:
  AccessLog(config::AccessLogConfig config, int fd);
  void Run() SLUICE_EXCLUDES(mutex_);
  // Writes `lines` to the file whole, reopening it first when asked to.
  void WriteOut(const std::string& lines);

  const config::AccessLogConfig config_;
  int fd_;  // the writer's only, once started

  Mutex mutex_;
  CondVar wake_;                                  // waited on with mutex_
  std::string queued_ SLUICE_GUARDED_BY(mutex_);  // whole lines
  size_t queued_lines_ SLUICE_GUARDED_BY(mutex_) = 0;
  bool reopen_ SLUICE_GUARDED_BY(mutex_) = false;
  bool stopping_ SLUICE_GUARDED_BY(mutex_) = false;

  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> write_errors_{0};
  std::thread writer_;  // last: starts once the rest is ready
};

}  // namespace sluice::http
