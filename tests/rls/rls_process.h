// `sluice serve` running Envoy's rate limit service on a real redis-server, for the end-to-end
// tests of the service (rls_service_test.cc) and of its limits under pressure
// (rls_pressure_test.cc): descriptors in a folder, a gRPC client, and the process's ports.
#pragma once

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "e2e/processes.h"
#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "rls/rate_limit_requests.h"

namespace sluice::rls {

// One `sluice serve` running only the rate limit service, with kDescriptors in a folder.
class RlsProcess {
 public:
  // `extra_store` goes inside the store's map after its url, `extra_rls` (indented lines) inside
  // the `rls` block, `extra_top` (lines) at the top level.
  explicit RlsProcess(uint16_t redis_port, std::string extra_store = "",
                      const std::string& extra_rls = "", std::string extra_top = "")
      : redis_port_(redis_port),
        extra_store_(std::move(extra_store)),
        extra_top_(std::move(extra_top)) {
    e2e::StartOnFreePorts(
        [&]() -> testing::Process& {
          grpc_ = testing::FreePort();
          json_ = testing::FreePort();
          admin_ = testing::FreePort();
          if (!dir_.empty()) std::filesystem::remove_all(dir_);
          dir_ = std::filesystem::temp_directory_path() / ("sluice-rls-" + std::to_string(grpc_));
          std::filesystem::create_directories(dir_ / "descriptors");
          WriteDescriptors(kDescriptors);
          WriteConfig(extra_rls);
          process_ = std::make_unique<testing::Process>(
              std::vector<std::string>{SLUICE_BINARY, "serve", "--config",
                                       (dir_ / "sluice.yaml").string()},
              LogPath());
          return *process_;
        },
        [this] { return e2e::Healthy(admin_); });
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(grpc_),
                                   grpc::InsecureChannelCredentials());
    client_ = envoy::service::ratelimit::v3::RateLimitService::NewStub(channel_);
    EXPECT_TRUE(channel_->WaitForConnected(std::chrono::system_clock::now() +
                                           std::chrono::milliseconds(5000)));
  }
  ~RlsProcess() {
    process_.reset();
    std::filesystem::remove_all(dir_);
  }
  RlsProcess(const RlsProcess&) = delete;
  RlsProcess& operator=(const RlsProcess&) = delete;

  // Rewrites the configuration file (for SIGHUP) with `extra_rls` in the `rls` block.
  void WriteConfig(const std::string& extra_rls) {
    std::ofstream(dir_ / "sluice.yaml")
        << "admin_listen: 127.0.0.1:" << admin_ << "\nthreads: 2\ndrain_timeout: 1s\n"
        << extra_top_ << "store: {type: redis, url: \"redis://127.0.0.1:" << redis_port_ << "/0\""
        << extra_store_ << "}\nrls:\n  listen: 127.0.0.1:" << grpc_
        << "\n  json_listen: 127.0.0.1:" << json_
        << "\n  config: [descriptors/]\n  response_headers: {}\n"
        << extra_rls;
  }

  void WriteDescriptors(const std::string& yaml) {
    std::ofstream(dir_ / "descriptors" / "edge.yaml") << yaml;
  }

  grpc::Status Call(const envoy::service::ratelimit::v3::RateLimitRequest& request,
                    envoy::service::ratelimit::v3::RateLimitResponse* response,
                    std::chrono::milliseconds deadline = std::chrono::milliseconds(5000)) const {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + deadline);
    return client_->ShouldRateLimit(&context, request, response);
  }

  envoy::service::ratelimit::v3::RateLimitResponse Ok(
      const envoy::service::ratelimit::v3::RateLimitRequest& request) const {
    envoy::service::ratelimit::v3::RateLimitResponse response;
    grpc::Status status = Call(request, &response);
    EXPECT_TRUE(status.ok()) << status.error_code() << " " << status.error_message();
    return response;
  }

  // The process's /metrics.
  std::string Metrics() const { return testing::Fetch(admin_, "GET", "/metrics").body; }

  // What the process has logged so far.
  std::string Log() const {
    std::ifstream log(LogPath());
    return {std::istreambuf_iterator<char>(log), {}};
  }

  uint16_t grpc() const { return grpc_; }
  uint16_t json() const { return json_; }
  uint16_t admin() const { return admin_; }
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }
  envoy::service::ratelimit::v3::RateLimitService::Stub& client() const { return *client_; }
  testing::Process& process() { return *process_; }

 private:
  std::string LogPath() const { return dir_.string() + ".log"; }

  const uint16_t redis_port_;
  const std::string extra_store_;
  const std::string extra_top_;
  uint16_t grpc_ = 0, json_ = 0, admin_ = 0;
  std::filesystem::path dir_;
  std::unique_ptr<testing::Process> process_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<envoy::service::ratelimit::v3::RateLimitService::Stub> client_;
};

inline envoy::service::ratelimit::v3::RateLimitRequest Request(
    const std::vector<DescriptorEntries>& descriptors, std::string domain = "edge") {
  return RequestOf(std::move(domain), descriptors);
}

// The overall codes of `n` calls of `request`: + for OK, x for OVER_LIMIT.
inline std::string Codes(const RlsProcess& rls,
                         const envoy::service::ratelimit::v3::RateLimitRequest& request, int n) {
  std::string codes;
  for (int i = 0; i < n; ++i) {
    codes += rls.Ok(request).overall_code() == envoy::service::ratelimit::v3::RateLimitResponse::OK
                 ? "+"
                 : "x";
  }
  return codes;
}

}  // namespace sluice::rls
