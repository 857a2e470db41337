#include "http/access_log.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>
#include <system_error>

namespace sluice::http {
namespace {

int OpenForAppend(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
}

// ISO 8601 in UTC with milliseconds: what log tools parse without being told the format.
std::string Timestamp(double seconds) {
  const auto whole = static_cast<time_t>(seconds);
  const auto millis = static_cast<int>((seconds - static_cast<double>(whole)) * 1000);
  std::tm utc{};
  gmtime_r(&whole, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", utc.tm_year + 1900,
                     utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, millis);
}

// The path may hold anything the client sent: quotes and control characters are escaped so that
// one request stays one line.
std::string Quoted(std::string_view text) {
  return nlohmann::json(std::string(text))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string FormatAccessLine(const AccessEntry& entry, config::AccessLogConfig::Format format) {
  if (format == config::AccessLogConfig::Format::kText) {
    return fmt::format("{} {} {} {} {} {} {:.6f} {}\n", Timestamp(entry.time), entry.client,
                       entry.method.empty() ? "-" : entry.method, entry.status, entry.decision,
                       entry.rule.empty() ? "-" : entry.rule, entry.store_seconds,
                       Quoted(entry.path));
  }
  nlohmann::json line = {{"time", Timestamp(entry.time)},
                         {"client", std::string(entry.client)},
                         {"method", std::string(entry.method)},
                         {"path", std::string(entry.path)},
                         {"status", entry.status},
                         {"decision", std::string(entry.decision)},
                         {"store_seconds", entry.store_seconds}};
  if (!entry.rule.empty()) line["rule"] = std::string(entry.rule);
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Result<std::unique_ptr<AccessLog>> AccessLog::Open(const config::AccessLogConfig& config) {
  const int fd = OpenForAppend(config.path);
  if (fd < 0) {
    return Status::InvalidArgument("access_log: " + config.path +
                                   " cannot be opened: " + std::generic_category().message(errno));
  }
  return std::unique_ptr<AccessLog>(new AccessLog(config, fd));
}

AccessLog::AccessLog(config::AccessLogConfig config, int fd)
    : config_(std::move(config)), fd_(fd), writer_([this] { Run(); }) {}

AccessLog::~AccessLog() {
  {
    MutexLock lock(&mutex_);
    stopping_ = true;
  }
  wake_.Signal();
  writer_.join();
  if (fd_ >= 0) ::close(fd_);
}

void AccessLog::Write(const AccessEntry& entry) {
  std::string line = FormatAccessLine(entry, config_.format);  // outside the lock
  {
    MutexLock lock(&mutex_);
    if (queued_lines_ >= config_.buffer_lines) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    queued_ += line;
    ++queued_lines_;
  }
  wake_.Signal();
}

void AccessLog::Reopen() {
  {
    MutexLock lock(&mutex_);
    reopen_ = true;
  }
  wake_.Signal();
}

void AccessLog::Run() {
  std::string batch;
  for (;;) {
    bool reopen = false;
    bool stopping = false;
    {
      MutexLock lock(&mutex_);
      while (!stopping_ && !reopen_ && queued_lines_ == 0) wake_.Wait(&mutex_);
      batch.swap(queued_);
      queued_.clear();
      queued_lines_ = 0;
      reopen = std::exchange(reopen_, false);
      stopping = stopping_;
    }
    if (reopen) {
      // Lines queued before the signal still belong to the old file, which may be renamed away:
      // the rotation's point is that they end there.
      const int fd = OpenForAppend(config_.path);
      if (fd < 0) {
        spdlog::error("access log {} cannot be reopened, writing on to the old file: {}",
                      config_.path, std::generic_category().message(errno));
      } else {
        WriteOut(batch);
        batch.clear();
        ::close(std::exchange(fd_, fd));
      }
    }
    WriteOut(batch);
    batch.clear();
    if (stopping) return;
  }
}

void AccessLog::WriteOut(const std::string& lines) {
  size_t done = 0;
  while (done < lines.size()) {
    const ssize_t n = ::write(fd_, lines.data() + done, lines.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      write_errors_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace sluice::http
