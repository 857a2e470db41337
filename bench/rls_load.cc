// A load generator for Envoy's rate limit service API: keeps `--concurrency` ShouldRateLimit
// calls in flight on grpc++'s callback API for `--seconds`, then prints the calls answered per
// second and the calls answered (and the errors, on stderr). Used by bench/rls_bench.
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"

namespace {

using envoy::service::ratelimit::v3::RateLimitRequest;
using envoy::service::ratelimit::v3::RateLimitResponse;
using envoy::service::ratelimit::v3::RateLimitService;
using Clock = std::chrono::steady_clock;

// The request of bench/rls_bench's descriptors: ip, then key and tenant when `descriptors` is 3.
RateLimitRequest BenchRequest(int descriptors) {
  RateLimitRequest request;
  request.set_domain("bench");
  const std::pair<const char*, const char*> entries[] = {
      {"ip", "203.0.113.42"}, {"key", "ak_bench"}, {"tenant", "org_bench"}};
  for (int i = 0; i < descriptors; ++i) {
    auto* entry = request.add_descriptors()->add_entries();
    entry->set_key(entries[i].first);
    entry->set_value(entries[i].second);
  }
  return request;
}

// The client class gRPC generates for the service.
using RateLimitClient = RateLimitService::Stub;

// What the call slots count, read by main once the last slot has stopped.
struct Counts {
  std::atomic<uint64_t> ok{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<int> running{0};  // slots still calling
};

// One call slot: issues a call, and another as each one ends, until the stop time. Made on the
// heap and never moved once started, since each call's callback holds `this`.
struct Caller {
  RateLimitClient& client;
  const RateLimitRequest& request;
  Clock::time_point stop;
  Counts& counts;
  std::unique_ptr<grpc::ClientContext> context{};  // the call in flight
  RateLimitResponse response{};

  void Start() {
    if (Clock::now() >= stop) {
      counts.running.fetch_sub(1);
      return;
    }
    context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    client.async()->ShouldRateLimit(
        context.get(), &request, &response, [this](const grpc::Status& s) {
          (s.ok() ? counts.ok : counts.errors).fetch_add(1, std::memory_order_relaxed);
          Start();
        });
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("ShouldRateLimit calls per second, and calls answered");
  std::string target = "127.0.0.1:8081";
  int descriptors = 1;
  int concurrency = 32;
  int channels = 2;
  double seconds = 5;
  app.add_option("--target", target, "host:port of the gRPC server");
  app.add_option("--descriptors", descriptors, "descriptors a call: 1 to 3")
      ->check(CLI::Range(1, 3));
  app.add_option("--concurrency", concurrency, "calls in flight");
  app.add_option("--channels", channels, "HTTP/2 connections the calls are spread over");
  app.add_option("--seconds", seconds, "how long to measure");
  CLI11_PARSE(app, argc, argv);

  const RateLimitRequest request = BenchRequest(descriptors);
  std::vector<std::unique_ptr<RateLimitClient>> clients;
  for (int i = 0; i < channels; ++i) {
    grpc::ChannelArguments args;
    args.SetInt("grpc.channel_id", i);  // distinct arguments: a connection each
    clients.push_back(RateLimitService::NewStub(
        grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args)));
  }
  Counts counts{.running = concurrency};
  const auto start = Clock::now();
  const auto stop =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::unique_ptr<Caller>> callers;
  callers.reserve(static_cast<size_t>(concurrency));
  for (int i = 0; i < concurrency; ++i) {
    callers.push_back(std::make_unique<Caller>(Caller{
        .client = *clients[i % channels], .request = request, .stop = stop, .counts = counts}));
  }
  for (auto& caller : callers) caller->Start();
  while (counts.running.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("%.0f %llu\n", static_cast<double>(counts.ok.load()) / elapsed,
              static_cast<unsigned long long>(counts.ok.load()));
  if (counts.errors.load() > 0) {
    std::fprintf(stderr, "%llu calls failed\n",
                 static_cast<unsigned long long>(counts.errors.load()));
  }
  return counts.errors.load() > 0 ? 1 : 0;
}
