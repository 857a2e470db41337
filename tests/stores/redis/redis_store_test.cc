// The Redis store against real redis-server processes: atomicity, expiry, the server's clock,
// lost scripts, outages and authentication (redis_calls_test.cc: pipelining, calls of several
// checks, layouts, replica waits and a server's hostile replies).
#include "sluice/redis_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <thread>

#include "sluice/limiter.h"
#include "stores/redis/redis_store_testing.h"
#include "support/apply_blocking.h"
#include "support/redis_server.h"
#include "support/wait_until.h"

// In sluice::testing, beside the Redis helpers these tests share (redis_store_testing.h).
namespace sluice::testing {
namespace {

using std::chrono::milliseconds;

// Waits until a check is decided by the store itself again, or gives up after `limit`.
bool RecoversWithin(const Limiter& limiter, milliseconds limit) {
  return testing::WaitUntil(
      [&] {
        return limiter.CheckBlocking({{"key", "recover"}}).checked;
      },
      limit);
}

// --- Atomicity ----------------------------------------------------------------------------

TEST(RedisAtomicityTest, FiftyThreadsOnOneBucketAdmitExactlyItsCapacity) {
  RedisServer server;
  // Five gateways, ten threads each, all on one bucket of 100 that refills too slowly to matter.
  std::vector<std::unique_ptr<Limiter>> gateways(5);
  for (auto& gateway : gateways) gateway = MakeLimiter(Connect(server.Options()), kHundredPerHour);
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  threads.reserve(50);
  for (int t = 0; t < 50; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        Decision d = gateways[t % 5]->CheckBlocking({{"key", "hot"}});
        ASSERT_TRUE(d.checked) << d.error.ToString();
        if (d.allowed) admitted.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 100);
}

// The broken way, kept here only to show what the script prevents: read, decide and write as
// three separate commands, so two clients can spend the same token.
bool ReadDecideWrite(RedisClient& client, const std::string& key) {
  std::string tokens = client.String({"HGET", key, "tokens"});
  double have = tokens.empty() ? 100 : std::stod(tokens);
  if (have < 1) return false;
  std::this_thread::yield();  // the gap that real network latency opens wider
  client.Command({"HSET", key, "tokens", std::to_string(have - 1)});
  return true;
}

TEST(RedisAtomicityTest, SeparateReadDecideWriteLetsMoreThanCapacityThrough) {
  RedisServer server;
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  threads.reserve(50);
  for (int t = 0; t < 50; ++t) {
    threads.emplace_back([&] {
      RedisClient client(server.port());
      for (int i = 0; i < 10; ++i) {
        if (ReadDecideWrite(client, "rl:key:hot")) admitted.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_GT(admitted.load(), 100);
}

// --- Expiry -------------------------------------------------------------------------------

TEST(RedisExpiryTest, KeyLivesExactlyUntilTheBucketIsFullAgain) {
  RedisServer server;
  auto limiter = MakeLimiter(Connect(server.Options()), kHundredPerMinute);
  auto client = server.Client();
  ASSERT_TRUE(limiter->CheckBlocking({{"key", "ak_abc123"}}).allowed);
  long long pttl = client->Integer({"PTTL", "rl:key:ak_abc123"});
  EXPECT_GT(pttl, 500);
  EXPECT_LE(pttl, 600);
  EXPECT_TRUE(testing::WaitUntil(
      [&] {
        return client->Integer({"EXISTS", "rl:key:ak_abc123"}) == 0;
      },
      milliseconds(2000)));
}

TEST(RedisExpiryTest, AFullBucketLeavesNoKey) {
  RedisServer server;
  auto store = Connect(server.Options());
  auto look = ApplyBlocking(*store, {{"rl:key:look", kHundredPerMinute, 0}});
  ASSERT_TRUE(look.ok());
  EXPECT_EQ(look->front().remaining, 100);
  EXPECT_EQ(server.Client()->Integer({"EXISTS", "rl:key:look"}), 0);
}

TEST(RedisExpiryTest, KeyHoldsTokensAndTimestampOnly) {
  RedisServer server;
  auto limiter = MakeLimiter(Connect(server.Options()), kHundredPerMinute);
  auto client = server.Client();
  limiter->CheckBlocking({{"key", "fields"}});
  EXPECT_EQ(client->String({"HGET", "rl:key:fields", "tokens"}), "99");
  EXPECT_EQ(client->Integer({"HLEN", "rl:key:fields"}), 2);
}

// --- Lost scripts -------------------------------------------------------------------------

TEST(RedisScriptTest, ScriptFlushUnderLoadReachesNoCallerAndChargesOnce) {
  RedisServer server;
  auto store = Connect(server.Options());
  const Limit big{1'000'000, 1, 60'000};  // one token a minute: counts stay exact
  auto limiter = MakeLimiter(store, big);
  auto client = server.Client();
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0};
  std::atomic<int> allowed{0};
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      while (!stop) {
        Decision d = limiter->CheckBlocking({{"key", "flush"}});
        if (!d.checked) errors.fetch_add(1);
        if (d.allowed) allowed.fetch_add(1);
      }
    });
  }
  for (int i = 0; i < 20; ++i) {
    // The load meets each flush before the next.
    const int seen = allowed + errors;
    EXPECT_TRUE(testing::WaitUntil([&] { return allowed + errors >= seen + 8; }));
    EXPECT_EQ(client->String({"SCRIPT", "FLUSH"}), "OK");
  }
  stop = true;
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GT(allowed.load(), 100);
  EXPECT_GT(store->Stats().script_loads, 1u);  // it did reload
  // Every op that met NOSCRIPT was sent again exactly once: the bucket was charged once per
  // allowed check, no more, no less.
  auto peek = ApplyBlocking(*store, {{"rl:key:flush", big, 0}});
  ASSERT_TRUE(peek.ok());
  EXPECT_EQ(peek->front().remaining, big.capacity - allowed.load());
}

TEST(RedisScriptTest, FunctionFlushIsRecoveredToo) {
  RedisServer server;
  RedisOptions options = server.Options();
  options.mode = ScriptMode::kFunction;
  auto store = Connect(options);
  auto limiter = MakeLimiter(store, kHundredPerHour);
  auto client = server.Client();
  EXPECT_TRUE(limiter->CheckBlocking({{"key", "f"}}).checked);
  EXPECT_EQ(client->String({"FUNCTION", "FLUSH"}), "OK");
  Decision d = limiter->CheckBlocking({{"key", "f"}});
  EXPECT_TRUE(d.checked) << d.error.ToString();
  EXPECT_EQ(d.verdicts.at(0).remaining, 98);
}

class RedisRestartTest : public ::testing::TestWithParam<ScriptMode> {};

TEST_P(RedisRestartTest, ChecksGoOnAfterARestartWithoutPersistence) {
  RedisServer server;
  RedisOptions options = server.Options();
  options.mode = GetParam();
  auto store = Connect(options);
  auto limiter = MakeLimiter(store, kHundredPerHour);
  EXPECT_TRUE(limiter->CheckBlocking({{"key", "r"}}).checked);
  server.Kill();
  server.Start();
  ASSERT_TRUE(RecoversWithin(*limiter, std::chrono::seconds(5)));
  Decision d = limiter->CheckBlocking({{"key", "r"}});
  EXPECT_TRUE(d.checked) << d.error.ToString();
  EXPECT_EQ(d.verdicts.at(0).remaining, 99);  // the restarted server forgot the bucket
  EXPECT_GE(store->Stats().connects, 2u);
}

INSTANTIATE_TEST_SUITE_P(Modes, RedisRestartTest,
                         ::testing::Values(ScriptMode::kEvalsha, ScriptMode::kFunction));

// --- Outages ------------------------------------------------------------------------------

class RedisFailurePolicyTest : public ::testing::TestWithParam<FailurePolicy> {};

TEST_P(RedisFailurePolicyTest, StoppedServerGivesThePolicyThenRecovers) {
  RedisServer server;
  RedisOptions options = server.Options();
  options.timeout = milliseconds(100);
  auto limiter = MakeLimiter(Connect(options), kHundredPerHour, GetParam());
  server.Kill();
  for (int i = 0; i < 5; ++i) {
    auto start = std::chrono::steady_clock::now();
    Decision d = limiter->CheckBlocking({{"key", "down"}});
    EXPECT_LT(std::chrono::steady_clock::now() - start, options.timeout + milliseconds(200));
    EXPECT_FALSE(d.checked);
    EXPECT_EQ(d.allowed, GetParam() == FailurePolicy::kOpen);
    EXPECT_NE(d.error.code(), StatusCode::kOk);
  }
  EXPECT_EQ(limiter->Stats().failure_policy, 5u);
  server.Start();
  EXPECT_TRUE(RecoversWithin(*limiter, std::chrono::seconds(5)));
}

TEST_P(RedisFailurePolicyTest, HungServerTimesOutThenRecovers) {
  RedisServer server;
  RedisOptions options = server.Options();
  options.timeout = milliseconds(50);
  auto limiter = MakeLimiter(Connect(options), kHundredPerHour, GetParam());
  server.Pause();
  auto start = std::chrono::steady_clock::now();
  Decision d = limiter->CheckBlocking({{"key", "hung"}});
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(250));
  EXPECT_FALSE(d.checked);
  EXPECT_EQ(d.error.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(d.allowed, GetParam() == FailurePolicy::kOpen);
  server.Resume();
  EXPECT_TRUE(RecoversWithin(*limiter, std::chrono::seconds(5)));
}

TEST(RedisOutageTest, EveryCheckTimesOutOnTimeWhileTheServerIsBusy) {
  RedisServer server;
  RedisOptions options = server.Options();
  options.timeout = milliseconds(50);
  auto store = Connect(options);
  // Another client keeps the server's only thread busy for a second and a half.
  std::thread busy([&] {
    server.Client()->Command(
        {"EVAL",
         "local t = redis.call('TIME') local s = t[1] * 1000000 + t[2] "
         "repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] - s > 1500000 "
         "return 1",
         "0"});
  });
  // Busy once a check goes unanswered.
  ASSERT_TRUE(testing::WaitUntil([&] {
    return ApplyBlocking(*store, {{"rl:key:probe", kHundredPerHour, 1}}).status().code() ==
           StatusCode::kDeadlineExceeded;
  }));
  for (int i = 0; i < 3; ++i) {  // each submitted after the one before it timed out
    auto start = std::chrono::steady_clock::now();
    auto replies = ApplyBlocking(*store, {{"rl:key:busy", kHundredPerHour, 1}});
    EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(250)) << "check " << i;
    EXPECT_EQ(replies.status().code(), StatusCode::kDeadlineExceeded);
  }
  busy.join();
}

TEST(RedisOutageTest, InvalidOperationsAreRefusedAndEmptyOnesAnsweredAtOnce) {
  RedisServer server;
  auto store = Connect(server.Options());
  EXPECT_TRUE(ApplyBlocking(*store, {}).ok());
  auto bad = ApplyBlocking(*store, {{"rl:key:x", {0, 1, 1000}, 1}});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  auto too_costly = ApplyBlocking(*store, {{"rl:key:x", kHundredPerHour, 101}});
  EXPECT_EQ(too_costly.status().code(), StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Policies, RedisFailurePolicyTest,
                         ::testing::Values(FailurePolicy::kOpen, FailurePolicy::kClosed));

TEST(RedisOutageTest, NoServerFailsFastWithUnavailable) {
  RedisOptions options;
  options.port = testing::FreePort();
  RedisStore store(options);
  EXPECT_FALSE(store.WaitReady(milliseconds(200)));
  auto start = std::chrono::steady_clock::now();
  auto replies = ApplyBlocking(store, {{"rl:key:x", kHundredPerHour, 1}});
  EXPECT_LT(std::chrono::steady_clock::now() - start, options.timeout + milliseconds(100));
  ASSERT_FALSE(replies.ok());
  EXPECT_EQ(replies.status().code(), StatusCode::kUnavailable);
}

TEST(RedisOutageTest, TooManyInFlightIsShedAtOnce) {
  RedisServer server;
  RedisOptions options = server.Options();
  options.max_in_flight = 4;
  options.timeout = milliseconds(300);
  auto store = Connect(options);
  server.Pause();
  std::vector<std::future<Result<std::vector<BucketReply>>>> slow;
  for (int i = 0; i < 4; ++i) {
    auto promise = std::make_shared<std::promise<Result<std::vector<BucketReply>>>>();
    slow.push_back(promise->get_future());
    store->Apply({{"rl:key:a", kHundredPerHour, 1}},
                 [promise](auto r) { promise->set_value(std::move(r)); });
  }
  // The pipeline takes submissions in the order they came: the fifth finds four before it.
  auto start = std::chrono::steady_clock::now();
  auto shed = ApplyBlocking(*store, {{"rl:key:b", kHundredPerHour, 1}});
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(100));
  ASSERT_FALSE(shed.ok());
  EXPECT_EQ(shed.status().code(), StatusCode::kResourceExhausted);
  for (auto& f : slow) EXPECT_EQ(f.get().status().code(), StatusCode::kDeadlineExceeded);
  server.Resume();
}

TEST(RedisOutageTest, DestroyingTheStoreCompletesPendingChecks) {
  RedisServer server;
  auto store = Connect(server.Options());
  server.Pause();
  auto promise = std::make_shared<std::promise<Result<std::vector<BucketReply>>>>();
  auto future = promise->get_future();
  store->Apply({{"rl:key:a", kHundredPerHour, 1}},
               [promise](auto r) { promise->set_value(std::move(r)); });
  store.reset();
  // Written to the paused server, which may still run it once it resumes: its fate is unknown.
  EXPECT_EQ(future.get().status().code(), StatusCode::kDeadlineExceeded);
  server.Resume();
}

// --- Connection settings ------------------------------------------------------------------

TEST(RedisConnectionTest, PasswordAndDatabase) {
  RedisServer server({"--requirepass", "s3cret"});
  RedisOptions options = server.Options();
  options.password = "s3cret";
  options.db = 3;
  auto limiter = MakeLimiter(Connect(options), kHundredPerHour);
  Decision d = limiter->CheckBlocking({{"key", "db"}});
  EXPECT_TRUE(d.checked) << d.error.ToString();
  RedisClient client(server.port());
  client.Command({"AUTH", "s3cret"});
  client.Command({"SELECT", "3"});
  EXPECT_EQ(client.Integer({"EXISTS", "rl:key:db"}), 1);
}

TEST(RedisConnectionTest, AclUserAndPassword) {
  RedisServer server;
  server.Client()->Command({"ACL", "SETUSER", "gateway", "on", ">pw", "~rl:*", "+@all"});
  RedisOptions options = server.Options();
  options.username = "gateway";
  options.password = "pw";
  auto limiter = MakeLimiter(Connect(options), kHundredPerHour);
  EXPECT_TRUE(limiter->CheckBlocking({{"key", "acl"}}).checked);
}

TEST(RedisConnectionTest, WrongPasswordIsAClearError) {
  RedisServer server({"--requirepass", "right"});
  RedisOptions options = server.Options();
  options.password = "wrong";
  RedisStore store(options);
  EXPECT_FALSE(store.WaitReady(milliseconds(300)));
  auto replies = ApplyBlocking(store, {{"rl:key:x", kHundredPerHour, 1}});
  ASSERT_FALSE(replies.ok());
  EXPECT_NE(replies.status().message().find("WRONGPASS"), std::string::npos)
      << replies.status().message();
}

}  // namespace
}  // namespace sluice::testing
