// Envoy's rate limit service under pressure, end to end on `sluice serve` and a real
// redis-server: a flood of calls on a stalled store, messages too large, streams that never send,
// and clients that ping too often. Each limit is shown to act, and the service to answer others
// meanwhile and normally afterwards.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <iostream>
#include <mutex>
#include <thread>

#include "rls/rls_process.h"
#include "support/http2_connection.h"

namespace sluice::rls {
namespace {

using e2e::MetricValue;
using e2e::WaitUntil;
using envoy::service::ratelimit::v3::RateLimitRequest;
using envoy::service::ratelimit::v3::RateLimitResponse;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
using testing::Fetch;
using testing::Http2Connection;
using testing::Http2Frame;
using testing::Http2Type;
using testing::RedisServer;

const char* const kMethod = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit";

milliseconds Since(steady_clock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(steady_clock::now() - start);
}

// Calls sent at once on the callback API, their answers awaited together.
class CallBatch {
 public:
  struct Call {
    grpc::ClientContext context;
    RateLimitRequest request;
    RateLimitResponse response;
    grpc::Status status;
    milliseconds answered_after{-1};  // from the batch's start
  };

  // Sends `requests` on `stub`, each with a deadline of `deadline`.
  CallBatch(envoy::service::ratelimit::v3::RateLimitService::Stub& stub,
            const std::vector<RateLimitRequest>& requests, milliseconds deadline)
      : start_(steady_clock::now()) {
    for (const RateLimitRequest& request : requests) {
      auto call = std::make_unique<Call>();
      call->request = request;
      call->context.set_deadline(std::chrono::system_clock::now() + deadline);
      calls_.push_back(std::move(call));
    }
    for (auto& c : calls_) {
      Call* call = c.get();
      stub.async()->ShouldRateLimit(&call->context, &call->request, &call->response,
                                    [this, call](grpc::Status status) {
                                      const std::lock_guard lock(mutex_);
                                      call->status = std::move(status);
                                      call->answered_after = Since(start_);
                                      ++answered_;
                                      changed_.notify_all();
                                    });
    }
  }
  // Waits for every answer: a call's context must outlive it.
  ~CallBatch() { EXPECT_TRUE(WaitForAnswers(calls_.size(), milliseconds(15'000))); }

  // Whether `n` calls have been answered within `timeout`.
  bool WaitForAnswers(size_t n, milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return answered_ >= n; });
  }

  // The calls answered with `code`, and the latest of their answers.
  std::pair<size_t, milliseconds> Answered(grpc::StatusCode code) {
    const std::lock_guard lock(mutex_);
    size_t n = 0;
    milliseconds latest{0};
    for (const auto& call : calls_) {
      if (call->answered_after.count() >= 0 && call->status.error_code() == code) {
        ++n;
        latest = std::max(latest, call->answered_after);
      }
    }
    return {n, latest};
  }

 private:
  const steady_clock::time_point start_;
  std::vector<std::unique_ptr<Call>> calls_;
  std::mutex mutex_;
  std::condition_variable changed_;
  size_t answered_ = 0;
};

// Rewrites the process's configuration with `extra_rls` and sends SIGHUP: whether the reload was
// then counted with `result` (success, failure), as the first of its kind.
bool Reload(RlsProcess& rls, const std::string& extra_rls, const std::string& result) {
  rls.WriteConfig(extra_rls);
  rls.process().Signal(SIGHUP);
  return WaitUntil(
      [&] {
        return MetricValue(rls.Metrics(),
                           "sluice_config_reloads_total{result=\"" + result + "\"}") == 1;
      },
      milliseconds(5000));
}

class RlsPressureTest : public ::testing::Test {
 protected:
  RedisServer redis_;
};

// Past rls.max_calls_in_flight calls waiting for a stalled store, each further call is refused
// at once with RESOURCE_EXHAUSTED (503 on /json) instead of joining a queue; once the store is
// back, the calls it held are answered and the service answers new calls again.
TEST_F(RlsPressureTest, AFloodOnAStalledStoreIsShedAtOnceAndNothingQueues) {
  constexpr size_t kLimit = 50;
  constexpr size_t kCalls = 400;
  RlsProcess rls(redis_.port(), ", timeout: 5s", "  max_calls_in_flight: 50\n");
  redis_.Pause();
  std::vector<RateLimitRequest> flood;
  for (size_t i = 0; i < kCalls; ++i)
    flood.push_back(Request({{{"client", "flood-" + std::to_string(i)}}}));
  {
    CallBatch batch(rls.client(), flood, milliseconds(10'000));
    ASSERT_TRUE(batch.WaitForAnswers(kCalls - kLimit, milliseconds(3000)));
    const auto [shed, latest] = batch.Answered(grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(shed, kCalls - kLimit);
    EXPECT_LT(latest, milliseconds(1500));
    std::cout << "[ figures  ] " << shed << " of " << kCalls
              << " calls shed on a stalled store, the last answered " << latest.count()
              << " ms after the flood began\n";

    // The others wait for the store, and nothing more: in flight, at the limit.
    const std::string metrics = rls.Metrics();
    EXPECT_EQ(MetricValue(metrics, "sluice_rls_calls_in_flight"), kLimit) << metrics;
    EXPECT_EQ(MetricValue(metrics, "sluice_rls_calls_shed_total"), kCalls - kLimit) << metrics;
    // Refused at once on both forms, while the store is stalled.
    const auto start = steady_clock::now();
    RateLimitResponse response;
    EXPECT_EQ(rls.Call(Request({{{"client", "one-more"}}}), &response).error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
    const auto json = Fetch(rls.json(), "POST", "/json", {{"Content-Type", "application/json"}},
                            R"({"domain": "edge", "descriptors": [{"entries": [{"key": "client",
                                "value": "one-more"}]}]})");
    EXPECT_EQ(json.status, 503);
    EXPECT_EQ(json.body, "too many calls in flight\n");
    EXPECT_LT(Since(start), milliseconds(1000));
    EXPECT_NE(rls.Log().find("rls.max_calls_in_flight (50) calls wait for the store"),
              std::string::npos);

    redis_.Resume();
    ASSERT_TRUE(batch.WaitForAnswers(kCalls, milliseconds(5000)));
    EXPECT_EQ(batch.Answered(grpc::StatusCode::OK).first, kLimit);
  }
  EXPECT_EQ(Codes(rls, Request({{{"client", "after"}}}), 4), "+++x");
  const std::string metrics = rls.Metrics();
  EXPECT_EQ(MetricValue(metrics, "sluice_rls_calls_in_flight"), 0) << metrics;
  EXPECT_EQ(MetricValue(metrics, "sluice_rls_calls_shed_total"), kCalls - kLimit + 2) << metrics;

  // The limit reloads; the gRPC server's limits need a restart.
  ASSERT_TRUE(Reload(rls, "  max_calls_in_flight: 1000\n", "success"));
  redis_.Pause();
  {
    // None is shed now; one connection holds at most max_concurrent_streams (100) of them
    // open, the rest wait in the client.
    CallBatch batch(rls.client(), flood, milliseconds(10'000));
    EXPECT_TRUE(
        WaitUntil([&] { return MetricValue(rls.Metrics(), "sluice_rls_calls_in_flight") == 100; },
                  milliseconds(5000)));
    redis_.Resume();
    ASSERT_TRUE(batch.WaitForAnswers(kCalls, milliseconds(5000)));
    EXPECT_EQ(batch.Answered(grpc::StatusCode::OK).first, kCalls);
  }
  EXPECT_TRUE(Reload(rls, "  max_calls_in_flight: 1000\n  max_concurrent_streams: 7\n", "failure"));
}

// A message over rls.max_message_bytes (1 MiB by default) is refused by gRPC with
// RESOURCE_EXHAUSTED, and a /json body over it with 413, while calls beside it are answered;
// the largest call the service takes fits under the default.
TEST_F(RlsPressureTest, MessagesTooLargeAreRefusedWithoutHarmingOtherCalls) {
  RlsProcess rls(redis_.port());
  std::vector<DescriptorEntries> largest;
  for (int i = 0; i < 1024; ++i) {
    const std::string prefix = std::to_string(i) + "-";
    largest.push_back({{"client", prefix + std::string(900 - prefix.size(), 'v')}});
  }
  const RateLimitRequest largest_call = Request(largest);
  EXPECT_GT(largest_call.ByteSizeLong(), 900'000U);
  RateLimitResponse response;
  const grpc::Status taken = rls.Call(largest_call, &response);
  EXPECT_TRUE(taken.ok()) << taken.error_message();
  EXPECT_EQ(response.statuses_size(), 1024);

  // Past the default of 1 MiB (gRPC's own is 4 MiB).
  RateLimitRequest over = Request({{{"client", "over"}}});
  over.set_domain(std::string(size_t{3} << 19, 'd'));
  EXPECT_EQ(rls.Call(over, &response).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);

  RateLimitRequest huge = Request({{{"client", "huge"}}});
  huge.set_domain(std::string(size_t{4} << 20, 'd'));
  std::atomic<bool> done{false};
  std::atomic<int> answered{0};
  std::thread beside([&] {
    RateLimitResponse r;
    while (!done) {
      if (rls.Call(Request({{{"client", "internal"}}}), &r).ok()) ++answered;
    }
  });
  const auto start = steady_clock::now();
  const grpc::Status refused = rls.Call(huge, &response);
  const milliseconds took = Since(start);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  std::cout << "[ figures  ] a 4 MiB message: " << refused.error_message() << ", in "
            << took.count() << " ms\n";
  const int before = answered;
  EXPECT_TRUE(WaitUntil([&] { return answered > before + 20; }, milliseconds(3000)));
  done = true;
  beside.join();

  const std::string big_json = R"({"domain": ")" + std::string(size_t{4} << 20, 'd') +
                               R"(", "descriptors": [{"entries": [{"key": "client"}]}]})";
  EXPECT_EQ(
      Fetch(rls.json(), "POST", "/json", {{"Content-Type", "application/json"}}, big_json).status,
      413);
  EXPECT_EQ(Codes(rls, Request({{{"client", "after-huge"}}}), 1), "+");
  EXPECT_EQ(Fetch(rls.json(), "POST", "/json", {{"Content-Type", "application/json"}},
                  R"({"domain": "edge", "descriptors": [{"entries": [{"key": "client",
                      "value": "after-huge-json"}]}]})")
                .status,
            200);
}

// The gRPC status (grpc-status) that a trailers-only HEADERS frame carries, or -1. The server's
// HPACK encoder writes it as a literal the test can find.
int TrailerStatus(const Http2Frame& frame) {
  const std::string name = "grpc-status";
  const size_t at = frame.payload.find(name);
  if (frame.type != Http2Type::kHeaders || at == std::string::npos) return -1;
  const size_t length = static_cast<uint8_t>(frame.payload[at + name.size()]) & 0x7f;
  return std::stoi(frame.payload.substr(at + name.size() + 1, length));
}

// A raw client that acknowledges the server's settings and opens `streams` gRPC calls that never
// send their message.
std::unique_ptr<Http2Connection> OpenSilentStreams(uint16_t port, uint32_t streams) {
  auto connection = std::make_unique<Http2Connection>(port);
  connection->SendPreface();
  EXPECT_TRUE(connection->AcknowledgeSettings(milliseconds(2000)));
  for (uint32_t i = 0; i < streams; ++i) connection->OpenGrpcStream(1 + 2 * i, kMethod);
  return connection;
}

// Reads `connection` until it ends (or nothing comes for `quiet`): how many of its calls were
// ended with UNAVAILABLE.
size_t UnavailableUntilClosed(Http2Connection& connection, milliseconds quiet) {
  size_t unavailable = 0;
  while (auto frame = connection.Read(quiet)) {
    if (TrailerStatus(*frame) == static_cast<int>(grpc::StatusCode::UNAVAILABLE)) ++unavailable;
  }
  return unavailable;
}

// Streams opened and never sent on hold a slot of their own connection only, at most
// rls.max_concurrent_streams of them (gRPC 1.51 closes a connection that opens more once it has
// acknowledged the limit), while other clients are answered; and not for long: a client that
// answers no ping is cut by keepalive, one that does loses its connection at max_connection_age
// and its grace, and one that sends nothing at all is cut at the header timeout.
TEST_F(RlsPressureTest, StreamsThatNeverSendHoldOnlyTheirOwnConnectionAndNotForLong) {
  RlsProcess rls(redis_.port(), "",
                 "  max_concurrent_streams: 8\n  keepalive: {time: 1s, timeout: 1s, "
                 "max_connection_age: 3s, max_connection_age_grace: 500ms}\n",
                 "header_timeout: 1s\n");
  const auto start = steady_clock::now();
  // Opens the 8 streams it may and never sends on them, nor answers a ping.
  std::unique_ptr<Http2Connection> hog = OpenSilentStreams(rls.grpc(), 8);
  // Opens one stream more than it may.
  std::unique_ptr<Http2Connection> greedy = OpenSilentStreams(rls.grpc(), 9);
  // gRPC's own client, which answers pings, on a connection of its own: 8 streams that never
  // send.
  grpc::ChannelArguments own_connection;
  own_connection.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(rls.grpc()),
                                           grpc::InsecureChannelCredentials(), own_connection);
  grpc::GenericStub generic(channel);
  grpc::CompletionQueue queue;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::GenericClientAsyncReaderWriter>> silent_calls;
  std::vector<grpc::Status> statuses(8);
  for (size_t i = 0; i < 8; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    silent_calls.push_back(generic.PrepareCall(contexts.back().get(), kMethod, &queue));
    silent_calls.back()->StartCall(reinterpret_cast<void*>(i));
    silent_calls.back()->Finish(&statuses[i], reinterpret_cast<void*>(100 + i));
  }
  // The queue is polled from the start: gRPC's client answers the server's pings only while its
  // queue is polled, and one that does not would be cut by keepalive instead of by age.
  std::atomic<size_t> ended{0};
  std::atomic<int64_t> last_end_ms{0};
  std::thread polling([&] {
    void* tag = nullptr;
    bool ok = false;
    while (ended < 8 &&
           queue.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + milliseconds(8000)) ==
               grpc::CompletionQueue::GOT_EVENT) {
      if (reinterpret_cast<uintptr_t>(tag) >= 100) {
        last_end_ms = Since(start).count();
        ++ended;
      }
    }
  });
  // Connects and sends nothing.
  Http2Connection mute(rls.grpc());

  // Meanwhile other clients are answered as ever.
  for (int i = 0; i < 20; ++i) {
    const auto call_start = steady_clock::now();
    EXPECT_EQ(Codes(rls, Request({{{"client", "internal"}}}), 1), "+");
    EXPECT_LT(Since(call_start), milliseconds(500));
  }

  // The greedy client's connection is closed at once, its calls ended.
  EXPECT_EQ(UnavailableUntilClosed(*greedy, milliseconds(1000)), 8U);
  EXPECT_TRUE(greedy->closed());
  const milliseconds greedy_cut = Since(start);
  // The mute connection is cut at the header timeout (1 s)...
  while (mute.Read(milliseconds(3000))) {
  }
  const milliseconds mute_cut = Since(start);
  EXPECT_TRUE(mute.closed());
  EXPECT_GT(mute_cut, milliseconds(800));
  EXPECT_LT(mute_cut, milliseconds(1800));
  // ...and the hog by keepalive: a ping unanswered for `timeout` (1 s), `time` (1 s) after it
  // connected.
  EXPECT_EQ(UnavailableUntilClosed(*hog, milliseconds(5000)), 8U);
  const milliseconds hog_cut = Since(start);
  EXPECT_TRUE(hog->closed());
  EXPECT_GT(hog_cut, milliseconds(1800));
  EXPECT_LT(hog_cut, milliseconds(3500));

  // The silent calls end with their connection, at its age (3 s, within 10%) and grace.
  polling.join();
  const milliseconds last_end{last_end_ms.load()};
  EXPECT_EQ(ended.load(), 8U);
  EXPECT_GT(last_end, milliseconds(2500));
  EXPECT_LT(last_end, milliseconds(6000));
  for (const grpc::Status& status : statuses) EXPECT_FALSE(status.ok());
  std::cout << "[ figures  ] the greedy client cut after " << greedy_cut.count()
            << " ms, the hog after " << hog_cut.count() << " ms, the mute connection after "
            << mute_cut.count() << " ms, the silent calls ended after " << last_end.count()
            << " ms (" << statuses[0].error_code() << " " << statuses[0].error_message() << ")\n";
  queue.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (queue.Next(&tag, &ok)) {
  }
  EXPECT_EQ(Codes(rls, Request({{{"client", "after-hogs"}}}), 1), "+");
}

// A client that pings more often than rls.keepalive.min_client_ping_interval while the server
// sends it nothing is sent GOAWAY (ENHANCE_YOUR_CALM, too_many_pings) at the third strike and
// disconnected; one that keeps to the interval is not.
TEST_F(RlsPressureTest, AClientPingingTooOftenIsSentGoaway) {
  RlsProcess rls(redis_.port(), "", "  keepalive: {min_client_ping_interval: 100ms}\n");
  Http2Connection flood(rls.grpc());
  flood.SendPreface();
  ASSERT_TRUE(flood.AcknowledgeSettings(milliseconds(2000)));
  std::optional<Http2Frame> goaway;
  int pings = 0;
  for (; pings < 50 && !goaway && !flood.closed(); ++pings) {
    flood.SendPing(static_cast<uint64_t>(pings));
    while (auto frame = flood.Read(milliseconds(10))) {
      if (frame->type == Http2Type::kGoaway) goaway = frame;
    }
  }
  ASSERT_TRUE(goaway) << "no GOAWAY after " << pings << " pings";
  EXPECT_EQ(goaway->Word(4), testing::kHttp2EnhanceYourCalm);
  EXPECT_EQ(goaway->payload.substr(8), "too_many_pings");
  // The first ping starts the clock and three strikes follow, unless this process was held up
  // for more than the interval between two of them.
  EXPECT_GE(pings, 4);
  EXPECT_LE(pings, 8);
  while (flood.Read(milliseconds(2000))) {
  }
  EXPECT_TRUE(flood.closed());

  Http2Connection polite(rls.grpc());
  polite.SendPreface();
  ASSERT_TRUE(polite.AcknowledgeSettings(milliseconds(2000)));
  int acks = 0;
  for (int i = 0; i < 5; ++i) {
    polite.SendPing(static_cast<uint64_t>(i));
    const auto sent = steady_clock::now();
    while (Since(sent) < milliseconds(500)) {
      auto frame = polite.Read(milliseconds(500) - Since(sent));
      if (!frame) break;
      EXPECT_NE(frame->type, Http2Type::kGoaway);
      if (frame->type == Http2Type::kPing && (frame->flags & testing::kHttp2Ack) != 0) ++acks;
    }
  }
  EXPECT_FALSE(polite.closed());
  EXPECT_EQ(acks, 5);
  std::cout << "[ figures  ] GOAWAY too_many_pings after " << pings
            << " pings 10 ms apart; 5 pings 500 ms apart acknowledged, no GOAWAY\n";
  EXPECT_EQ(Codes(rls, Request({{{"client", "after-pings"}}}), 1), "+");
}

}  // namespace
}  // namespace sluice::rls
