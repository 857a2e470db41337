// Envoy's rate limit service end to end: real `sluice serve` processes on a real redis-server,
// called by a C++ gRPC client, over HTTP JSON, and by a Node client on @grpc/grpc-js. What the
// service decides is tested in process (service_test.cc, envoy_expectations_test.cc); here, what
// needs the process: gRPC and HTTP/2, Redis, the health service, signals.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "grpc/health/v1/health.grpc.pb.h"
#include "rls/rls_process.h"
#include "support/wait_until.h"

namespace sluice::rls {
namespace {

using e2e::MetricValue;
using e2e::WaitUntil;
using envoy::service::ratelimit::v3::RateLimitRequest;
using envoy::service::ratelimit::v3::RateLimitResponse;
using envoy::service::ratelimit::v3::RateLimitService;
using std::chrono::milliseconds;
using testing::Fetch;
using testing::FreePort;
using testing::Process;
using testing::RedisServer;

class RlsServiceTest : public ::testing::Test {
 protected:
  RedisServer redis_;
};

// On Redis, as envoyproxy/ratelimit counts: every hit, past the limit too, and the same
// descriptor twice in one call in turn.
TEST_F(RlsServiceTest, EveryHitCountsAndTheSameDescriptorTwiceCountsInTurn) {
  RlsProcess rls(redis_.port());
  RateLimitRequest twice = Request({{{"client", "dave"}}, {{"client", "dave"}}});
  RateLimitResponse first = rls.Ok(twice);
  EXPECT_EQ(first.statuses(0).limit_remaining(), 2U);
  EXPECT_EQ(first.statuses(1).limit_remaining(), 1U);
  RateLimitRequest big = Request({{{"client", "dave"}}});
  big.set_hits_addend(5);
  RateLimitResponse over = rls.Ok(big);
  EXPECT_EQ(over.overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(over.statuses(0).limit_remaining(), 0U);
  RateLimitRequest look = Request({{{"client", "dave"}}});
  look.mutable_descriptors(0)->mutable_hits_addend()->set_value(0);
  EXPECT_EQ(rls.Ok(look).overall_code(), RateLimitResponse::OVER_LIMIT);  // counted: in debt
  RateLimitRequest fresh = Request({{{"client", "erin"}}});
  fresh.set_hits_addend(3);
  rls.Ok(fresh);
  fresh.mutable_descriptors(0)->mutable_hits_addend()->set_value(0);
  EXPECT_EQ(rls.Ok(fresh).overall_code(), RateLimitResponse::OK);  // at the limit, not past it
}

TEST_F(RlsServiceTest, TwoProcessesSharingOneRedisAreExact) {
  RlsProcess one(redis_.port());
  RlsProcess two(redis_.port());
  std::atomic<int> allowed{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      const RlsProcess& rls = t % 2 == 0 ? one : two;
      for (int i = 0; i < 40; ++i) {
        if (rls.Ok(Request({{{"shared", "k"}}})).overall_code() == RateLimitResponse::OK) {
          ++allowed;
        }
      }
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(allowed.load(), 50);  // 50 an hour; 160 calls
}

TEST_F(RlsServiceTest, MalformedRequestsAreRefusedAndNeverStopTheService) {
  // The store's timeout is not under test: a slow build (under a sanitizer) takes longer than the
  // default 50 ms for a call of 1,024 checks.
  RlsProcess rls(redis_.port(), ", timeout: 2s");
  RateLimitResponse response;
  EXPECT_EQ(rls.Call(Request({{{"client", "a"}}}, ""), &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(rls.Call(Request({}), &response).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(rls.Call(Request({{{"client", std::string(5000, 'x')}}}), &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(rls.Call(Request({{}}), &response).ok());  // no entries: matches nothing

  // The most descriptors a call may have go to the store in one call; one more is refused.
  std::vector<DescriptorEntries> many;
  for (int i = 0; i < 1024; ++i) many.push_back({{"client", "many-" + std::to_string(i)}});
  RateLimitResponse all = rls.Ok(Request(many));
  EXPECT_EQ(all.overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(all.statuses_size(), 1024);
  EXPECT_EQ(all.statuses(1023).limit_remaining(), 2U);
  many.push_back({{"client", "one-too-many"}});
  EXPECT_EQ(rls.Call(Request(many), &response).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  // Bytes that are no RateLimitRequest at all.
  grpc::GenericStub generic(rls.channel());
  for (const std::string& garbage :
       {std::string("\xff\xff\xff\xff\x0f", 5), std::string(1, '\x12')}) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + milliseconds(5000));
    grpc::Slice slice(garbage);
    grpc::ByteBuffer request(&slice, 1), reply;
    std::mutex mutex;
    std::condition_variable done;
    bool finished = false;
    grpc::Status status;
    generic.UnaryCall(&context, "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit",
                      grpc::StubOptions(), &request, &reply, [&](grpc::Status s) {
                        const std::lock_guard lock(mutex);
                        status = std::move(s);
                        finished = true;
                        done.notify_one();
                      });
    std::unique_lock lock(mutex);
    ASSERT_TRUE(done.wait_for(lock, std::chrono::seconds(5), [&] { return finished; }));
    EXPECT_FALSE(status.ok());
  }

  // The JSON form: malformed bodies are 400.
  for (const char* body : {"", "{", "[]", "{\"domain\": 5}", "{\"nope\": 1}"}) {
    EXPECT_EQ(
        Fetch(rls.json(), "POST", "/json", {{"Content-Type", "application/json"}}, body).status,
        400)
        << body;
  }
  EXPECT_EQ(Fetch(rls.json(), "GET", "/json").status, 405);
  EXPECT_EQ(Fetch(rls.json(), "POST", "/other", {}, "{}").status, 404);
  EXPECT_EQ(Codes(rls, Request({{{"client", "still-here"}}}), 1), "+");
  // The JSON listener answers a call over HTTP as the handler does in process (service_test.cc).
  const std::string body =
      R"({"domain": "edge", "descriptors": [{"entries": [{"key": "client", "value": "json"}]}]})";
  EXPECT_EQ(Fetch(rls.json(), "POST", "/json", {{"Content-Type", "application/json"}}, body).status,
            200);
}

TEST_F(RlsServiceTest, DeadlinesAndStoreFailures) {
  // The store may take 2 s; the caller waits 300 ms and is told so, then the service goes on.
  RlsProcess slow(redis_.port(), ", timeout: 2s");
  redis_.Pause();
  RateLimitResponse response;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(slow.Call(Request({{{"client", "late"}}}), &response, milliseconds(300)).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1500));
  redis_.Resume();
  EXPECT_EQ(Codes(slow, Request({{{"client", "on-time"}}}), 1), "+");

  // With failure: error, a store that is gone is UNAVAILABLE, for Envoy's failure_mode_deny.
  RlsProcess strict(redis_.port(), ", timeout: 100ms", "  failure: error\n");
  redis_.Kill();
  // Once the service knows the store is gone: a call written just before it noticed would be
  // one the lost connection cut off, which may have been applied (DEADLINE_EXCEEDED).
  ASSERT_TRUE(
      testing::WaitUntil([&] { return Fetch(strict.admin(), "GET", "/readyz").status == 503; }));
  EXPECT_EQ(strict.Call(Request({{{"client", "a"}}}), &response).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(strict.Call(Request({{{"nobody", "a"}}}), &response).ok());  // no store needed
  // With the gateway's failure policy (open by default), it answers OK.
  EXPECT_EQ(Codes(slow, Request({{{"client", "a"}}}), 1), "+");
}

TEST_F(RlsServiceTest, HealthReloadAndDrain) {
  RlsProcess rls(redis_.port());
  auto health = grpc::health::v1::Health::NewStub(rls.channel());
  grpc::ClientContext context;
  grpc::health::v1::HealthCheckResponse served;
  ASSERT_TRUE(health->Check(&context, {}, &served).ok());
  EXPECT_EQ(served.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  EXPECT_EQ(rls.Ok(Request({{{"client", "r"}}})).statuses(0).current_limit().requests_per_unit(),
            3U);
  rls.WriteDescriptors(
      "domain: edge\ndescriptors:\n  - key: client\n    rate_limit: {unit: hour, "
      "requests_per_unit: "
      "7}\n");
  rls.process().Signal(SIGHUP);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return rls.Ok(Request({{{"client", "r2"}}}))
                   .statuses(0)
                   .current_limit()
                   .requests_per_unit() == 7;
      },
      milliseconds(5000)));
  // A bad file is refused and the running descriptors stay.
  rls.WriteDescriptors("domain: edge\nbad: field\n");
  rls.process().Signal(SIGHUP);
  // The refusal is counted before the old descriptors are asserted, so that a reload that never
  // ran cannot pass for one refused.
  ASSERT_TRUE(WaitUntil(
      [&] {
        return MetricValue(rls.Metrics(), R"(sluice_config_reloads_total{result="failure"})") == 1;
      },
      milliseconds(5000)));
  EXPECT_EQ(rls.Ok(Request({{{"client", "r3"}}})).statuses(0).current_limit().requests_per_unit(),
            7U);

  const auto stop = std::chrono::steady_clock::now();
  rls.process().Signal(SIGTERM);
  EXPECT_EQ(rls.process().Wait(milliseconds(8000)), 0);
  // Connected clients are given until the drain timeout to go.
  EXPECT_LT(std::chrono::steady_clock::now() - stop, milliseconds(6000));
}

// SIGTERM while calls keep coming: every call gRPC took is answered before the loops stop, and
// the process exits. (A call taken between the drain's start and gRPC's refusing new ones must
// not wait on a stopped loop: gRPC's shutdown would wait for it for ever.)
TEST_F(RlsServiceTest, StopsUnderLoad) {
  constexpr int kRounds = 5;
  constexpr int kClients = 32;
  for (int round = 0; round < kRounds; ++round) {
    RlsProcess rls(redis_.port());
    std::atomic<bool> stop{false};
    std::atomic<int> answered{0};
    std::vector<std::thread> clients;
    for (int i = 0; i < kClients; ++i) {
      clients.emplace_back([&] {
        RateLimitResponse response;
        while (!stop && rls.Call(Request({{{"client", "busy"}}}), &response).ok()) ++answered;
      });
    }
    // Not ASSERT: the clients are stopped and joined whatever happens.
    const bool busy = WaitUntil([&] { return answered > 1000; }, milliseconds(5000));
    EXPECT_TRUE(busy) << answered << " calls answered";
    rls.process().Signal(SIGTERM);
    EXPECT_EQ(rls.process().Wait(milliseconds(8000)), 0) << "round " << round;
    stop = true;
    for (std::thread& t : clients) t.join();
    if (!busy) return;
  }
}

TEST(RlsCheckConfigTest, ValidatesTheDescriptorFiles) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("sluice-rls-check-" + std::to_string(FreePort()));
  std::filesystem::create_directories(dir / "d");
  std::ofstream(dir / "sluice.yaml") << "rls: {listen: 127.0.0.1:1, config: [d/]}\n";
  auto check = [&](const std::string& descriptors) {
    std::ofstream(dir / "d" / "edge.yaml") << descriptors;
    Process process({SLUICE_BINARY, "check-config", (dir / "sluice.yaml").string()},
                    dir.string() + "/check.log");
    const std::optional<int> code = process.Wait(milliseconds(5000));
    std::ifstream log(dir / "check.log");
    return std::pair(code, std::string((std::istreambuf_iterator<char>(log)), {}));
  };
  auto good = check(kDescriptors);
  EXPECT_EQ(good.first, 0) << good.second;
  EXPECT_NE(good.second.find("1 rate limit service domains"), std::string::npos) << good.second;
  auto bad = check("domain: edge\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight}\n");
  EXPECT_EQ(bad.first, 1);
  EXPECT_NE(bad.second.find("edge.yaml:4: descriptors[0].rate_limit.unit"), std::string::npos)
      << bad.second;
  std::filesystem::remove_all(dir);
}

TEST_F(RlsServiceTest, NodeClientOnGrpcJs) {
  if (std::system("command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1") != 0) {
    // CI installs them through scripts/bootstrap: there, their absence is a failure.
    const char* ci = std::getenv("CI");
    if (ci != nullptr && std::string(ci) == "true") FAIL() << "node and npm are not installed";
    GTEST_SKIP() << "node and npm are not installed (scripts/bootstrap installs them)";
  }
  RlsProcess rls(redis_.port());
  const std::filesystem::path work =
      std::filesystem::temp_directory_path() / ("sluice-rls-node-" + std::to_string(rls.grpc()));
  std::filesystem::create_directories(work);
  for (const char* file : {"package.json", "package-lock.json", "client.js"}) {
    std::filesystem::copy_file(std::filesystem::path(SLUICE_SOURCE_DIR) / "tests/rls/node" / file,
                               work / file, std::filesystem::copy_options::overwrite_existing);
  }
  const std::string log = work.string() + ".log";
  Process node({"sh", "-c",
                "cd '" + work.string() +
                    "' && npm ci --no-audit --no-fund --loglevel=error && node client.js " +
                    std::to_string(rls.grpc()) + " '" + SLUICE_SOURCE_DIR + "/proto' node-client"},
               log);
  const std::optional<int> code = node.Wait(milliseconds(110'000));
  std::ifstream output(log);
  const std::string text((std::istreambuf_iterator<char>(output)), {});
  EXPECT_EQ(code, 0) << text;
  EXPECT_NE(text.find("node client: 4 checks passed"), std::string::npos) << text;
  std::filesystem::remove_all(work);
}

}  // namespace
}  // namespace sluice::rls
