// Processes for end-to-end tests: the demo upstream and `sluice serve`, each on ports of its
// own, stopped when the object goes.
#pragma once

#include <chrono>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/process.h"
#include "support/redis_server.h"
#include "support/wait_until.h"

namespace sluice::e2e {

using std::chrono::milliseconds;
using testing::Fetch;
using testing::FreePort;
using testing::HttpResult;
using testing::Process;
using testing::WaitUntil;

inline bool Healthy(uint16_t port) { return Fetch(port, "GET", "/healthz").status == 200; }

// Whether the process with admin port `port` reaches its stores (/readyz).
inline bool Ready(uint16_t port) { return Fetch(port, "GET", "/readyz").status == 200; }

// The value of the series `series` (name and labels, exactly as rendered) in the metrics `text`,
// or -1.
inline double MetricValue(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ') {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return -1;
}

// How many reloads the process listening for admin on `admin_port` has counted with `result`
// (success, failure), or -1 when /metrics does not say.
inline double Reloads(uint16_t admin_port, const std::string& result) {
  return MetricValue(Fetch(admin_port, "GET", "/metrics").body,
                     "sluice_config_reloads_total{result=\"" + result + "\"}");
}

// What `sluice check-config` prints for the file at `path`.
inline std::string CheckConfig(const std::string& path) {
  const std::string log = path + ".check-config.log";
  Process check({SLUICE_BINARY, "check-config", path}, log);
  EXPECT_TRUE(check.Wait(milliseconds(5000)).has_value());
  std::ifstream in(log);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Runs `start` (which picks free ports and starts a process on them) until `ready` holds. A
// port found free can be taken by another test's process before this one binds it; the process
// then exits at once, and is started again on other ports.
inline void StartOnFreePorts(const std::function<Process&()>& start,
                             const std::function<bool()>& ready) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    Process& process = start();
    bool exited = false;
    const bool done = WaitUntil(
        [&] {
          exited = process.Wait(milliseconds(0)).has_value();
          return exited || ready();
        },
        milliseconds(5000));
    if (done && !exited) return;
    if (!exited) break;
  }
  ADD_FAILURE() << "the process did not start";
}

// The demo upstream on a port of its own.
class Upstream {
 public:
  Upstream() {
    StartOnFreePorts(
        [this]() -> Process& {
          port_ = FreePort();
          process_ = std::make_unique<Process>(
              std::vector<std::string>{SLUICE_BINARY, "demo-upstream", "--listen",
                                       "127.0.0.1:" + std::to_string(port_)},
              "/tmp/sluice-test-upstream-" + std::to_string(port_) + ".log");
          return *process_;
        },
        [this] { return Fetch(port_, "GET", "/").status == 200; });
  }
  uint16_t port() const { return port_; }
  void Stop() { process_.reset(); }

 private:
  uint16_t port_ = 0;
  std::unique_ptr<Process> process_;
};

// One `sluice serve` process with `body` as the rest of its configuration.
class GatewayProcess {
 public:
  // `upstream_fields` go into the upstream's map after its address and timeout.
  GatewayProcess(uint16_t upstream_port, const std::string& body, std::string upstream_fields = "")
      : upstream_fields_(std::move(upstream_fields)) {
    StartOnFreePorts(
        [&]() -> Process& {
          proxy_ = FreePort();
          check_ = FreePort();
          admin_ = FreePort();
          path_ = "/tmp/sluice-test-" + std::to_string(proxy_) + ".yaml";
          Write(upstream_port, body);
          process_ = std::make_unique<Process>(
              std::vector<std::string>{SLUICE_BINARY, "serve", "--config", path_}, LogPath());
          return *process_;
        },
        [this] { return Healthy(admin_); });
  }

  // Rewrites the configuration file (for SIGHUP).
  void Write(uint16_t upstream_port, const std::string& body) {
    std::ofstream(path_) << "listen: 127.0.0.1:" << proxy_ << "\ncheck_listen: 127.0.0.1:" << check_
                         << "\nadmin_listen: 127.0.0.1:" << admin_ << "\nthreads: 2\n"
                         << "upstream: {address: 127.0.0.1:" << upstream_port << ", timeout: 1s"
                         << upstream_fields_ << "}\n"
                         << body;
  }

  HttpResult Get(const std::string& target,
                 const std::vector<std::pair<std::string, std::string>>& headers = {}) const {
    return Fetch(proxy_, "GET", target, headers);
  }

  // What the process has logged so far.
  std::string Log() const {
    std::ifstream log(LogPath());
    return {std::istreambuf_iterator<char>(log), {}};
  }

  const std::string& ConfigPath() const { return path_; }
  uint16_t proxy() const { return proxy_; }
  uint16_t check() const { return check_; }
  uint16_t admin() const { return admin_; }
  Process& process() { return *process_; }

 private:
  std::string LogPath() const { return "/tmp/sluice-test-" + std::to_string(proxy_) + ".log"; }

  std::string upstream_fields_;
  uint16_t proxy_ = 0, check_ = 0, admin_ = 0;
  std::string path_;
  std::unique_ptr<Process> process_;
};

}  // namespace sluice::e2e
