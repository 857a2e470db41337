// Processes for end-to-end tests: the demo upstream and `sluice serve`, each on ports of its
// own, stopped when the object goes.
#pragma once

#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/http_client.h"
#include "support/process.h"
#include "support/redis_server.h"

namespace sluice::e2e {

using std::chrono::milliseconds;
using testing::Fetch;
using testing::FreePort;
using testing::HttpResult;
using testing::Process;

inline bool Healthy(uint16_t port) { return Fetch(port, "GET", "/healthz").status == 200; }

inline bool WaitUntil(const std::function<bool()>& condition, milliseconds limit) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < give_up) {
    if (condition()) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return false;
}

// The demo upstream on a port of its own.
class Upstream {
 public:
  Upstream() : port_(FreePort()) {
    process_ = std::make_unique<Process>(
        std::vector<std::string>{SLUICE_BINARY, "demo-upstream", "--listen",
                                 "127.0.0.1:" + std::to_string(port_)},
        "/tmp/sluice-test-upstream-" + std::to_string(port_) + ".log");
    EXPECT_TRUE(
        WaitUntil([&] { return Fetch(port_, "GET", "/").status == 200; }, milliseconds(5000)));
  }
  uint16_t port() const { return port_; }
  void Stop() { process_.reset(); }

 private:
  uint16_t port_;
  std::unique_ptr<Process> process_;
};

// One `sluice serve` process with `body` as the rest of its configuration.
class Gateway {
 public:
  Gateway(uint16_t upstream_port, const std::string& body)
      : proxy_(FreePort()), check_(FreePort()), admin_(FreePort()) {
    path_ = "/tmp/sluice-test-" + std::to_string(proxy_) + ".yaml";
    Write(upstream_port, body);
    process_ = std::make_unique<Process>(
        std::vector<std::string>{SLUICE_BINARY, "serve", "--config", path_},
        "/tmp/sluice-test-" + std::to_string(proxy_) + ".log");
    EXPECT_TRUE(WaitUntil([&] { return Healthy(admin_); }, milliseconds(5000)));
  }

  // Rewrites the configuration file (for SIGHUP).
  void Write(uint16_t upstream_port, const std::string& body) {
    std::ofstream(path_) << "listen: 127.0.0.1:" << proxy_ << "\ncheck_listen: 127.0.0.1:" << check_
                         << "\nadmin_listen: 127.0.0.1:" << admin_ << "\nthreads: 2\n"
                         << "upstream: {address: 127.0.0.1:" << upstream_port << ", timeout: 1s}\n"
                         << body;
  }

  HttpResult Get(const std::string& target,
                 const std::vector<std::pair<std::string, std::string>>& headers = {}) const {
    return Fetch(proxy_, "GET", target, headers);
  }

  uint16_t proxy() const { return proxy_; }
  uint16_t check() const { return check_; }
  uint16_t admin() const { return admin_; }
  Process& process() { return *process_; }

 private:
  uint16_t proxy_, check_, admin_;
  std::string path_;
  std::unique_ptr<Process> process_;
};

}  // namespace sluice::e2e
