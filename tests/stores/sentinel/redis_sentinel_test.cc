// The sentinel store against a real Sentinel setup (a master, a replica and three sentinels):
// the count shared exactly, a failover under load survived without a restart, and the sentinels
// themselves failing one at a time or all at once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sluice/limiter.h"
#include "sluice/redis_store.h"
#include "support/apply_blocking.h"
#include "support/load_pacing.h"
#include "support/redis_sentinels.h"
#include "support/tls_certificates.h"
#include "support/wait_until.h"

namespace sluice {
namespace {

using RealClock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using testing::ApplyBlocking;
using testing::RedisSentinels;
using testing::WaitUntil;

const Limit kHundredPerHour{100, 100, 3'600'000};
// Refills one token every five minutes, less than one in a test: what the bucket holds is what
// it was charged, give or take none. (One a day would be refused: an empty bucket would take
// longer than ten years to refill.)
const Limit kMillionSlowly{1'000'000, 1, 300'000};

std::shared_ptr<Store> Unowned(Store& store) {
  return {&store, [](Store*) {}};
}

std::unique_ptr<Limiter> LimiterOn(Store& store) {
  auto limiter = Limiter::Create({{"per-key", "key", "", kHundredPerHour, 1}}, {}, Unowned(store));
  EXPECT_TRUE(limiter.ok());
  return std::move(*limiter);
}

TEST(RedisSentinelTest, TwoStoresShareTheCountExactly) {
  RedisSentinels setup;
  RedisStore first(setup.Options());
  RedisStore second(setup.Options());
  ASSERT_TRUE(first.WaitReady(std::chrono::seconds(5)));
  ASSERT_TRUE(second.WaitReady(std::chrono::seconds(5)));
  std::unique_ptr<Limiter> limiters[] = {LimiterOn(first), LimiterOn(second)};
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  threads.reserve(20);
  for (int t = 0; t < 20; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        if (limiters[t % 2]->CheckBlocking({{"key", "shared"}}).allowed) admitted.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 100);
}

constexpr const char* kLoadKey = "rl:key:load";

// The tokens that `key`'s bucket holds on the server at `port`, as last written there: where
// checks went, since after a failover the old master takes writes for a while yet.
double TokensOn(const RedisSentinels& setup, uint16_t port, const std::string& key,
                const Limit& limit) {
  const std::string tokens = setup.Client(port)->String({"HGET", key, "tokens"});
  return tokens.empty() ? static_cast<double>(limit.capacity) : std::stod(tokens);
}

// Checks one at a time on one bucket until told to stop, counting what the store admitted and
// what failed, and when the last failure was.
class Load {
 public:
  explicit Load(Store& store) : thread_([this, &store] { Run(store); }) {}
  ~Load() { Stop(); }

  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int admitted() const { return admitted_; }
  int failed() const { return failed_; }

 private:
  void Run(Store& store) {
    while (!stop_) {
      auto replies = ApplyBlocking(store, {{kLoadKey, kMillionSlowly, 1}});
      if (replies.ok() && replies->front().allowed) {
        admitted_.fetch_add(1);
      } else {
        failed_.fetch_add(1);
        testing::PaceLoad(milliseconds(5));  // while the store fails at once
      }
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<int> admitted_{0};
  std::atomic<int> failed_{0};
  std::thread thread_;
};

TEST(RedisSentinelTest, AFailoverUnderLoadMovesTheChecksToTheNewMaster) {
  RedisSentinels setup;
  RedisStore store(setup.Options());
  ASSERT_TRUE(store.WaitReady(std::chrono::seconds(5)));
  const uint16_t old_master = setup.MasterPort();
  Load load(store);
  ASSERT_TRUE(WaitUntil([&] { return load.admitted() >= 20; })) << "the load never got going";
  const auto start = RealClock::now();
  const uint16_t new_master = setup.Failover();
  ASSERT_NE(new_master, old_master);
  // The sentinels turn the old master into a replica only some seconds later: until then it
  // still takes writes, so a success says nothing of where it went. The checks have moved when
  // the new master's bucket goes down.
  const double tokens_then = TokensOn(setup, new_master, kLoadKey, kMillionSlowly);
  auto moved = [&] { return TokensOn(setup, new_master, kLoadKey, kMillionSlowly) < tokens_then; };
  WaitUntil(moved, std::chrono::seconds(5));
  const auto resumed = std::chrono::duration_cast<milliseconds>(RealClock::now() - start);
  EXPECT_TRUE(moved()) << "no check reached the new master within 5 s of the failover";
  const int admitted = load.admitted();
  EXPECT_TRUE(WaitUntil([&] { return load.admitted() >= admitted + 20; }))
      << "the load stopped after the failover";
  load.Stop();
  auto last = ApplyBlocking(store, {{kLoadKey, kMillionSlowly, 1}});
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  const int64_t charged = kMillionSlowly.capacity - 1 - last->front().remaining;
  // What the new master holds was charged by this test's checks, failed ones included at most
  // (a call cut off may have been applied); admitted counts that replication had not carried
  // over when the old master stepped down are what it took with it.
  EXPECT_LE(charged, load.admitted() + load.failed());
  const int64_t lost = std::max<int64_t>(0, load.admitted() - charged);
  std::cout << "failover: checks resumed on the new master " << resumed.count()
            << " ms after SENTINEL FAILOVER; " << load.failed() << " checks failed; " << lost
            << " of " << load.admitted() << " admitted counts stayed with the old master\n";
  ::testing::Test::RecordProperty("resumed_ms", static_cast<int>(resumed.count()));
  ::testing::Test::RecordProperty("failed_checks", load.failed());
  ::testing::Test::RecordProperty("lost_counts", static_cast<int>(lost));
  EXPECT_GT(store.Stats().connects, 1u);
}

TEST(RedisSentinelTest, ASentinelDownLeavesTheOthersToAnswer) {
  RedisSentinels setup;
  setup.KillSentinel(0);  // the first one asked
  RedisStore store(setup.Options());
  ASSERT_TRUE(store.WaitReady(std::chrono::seconds(5))) << store.LastError();
  EXPECT_TRUE(ApplyBlocking(store, {{"rl:key:a", kHundredPerHour, 1}}).ok());
  // And a failover still reaches the store through the sentinels that are left.
  const uint16_t new_master = setup.Failover();
  const double tokens_then = TokensOn(setup, new_master, "rl:key:a", kHundredPerHour);
  auto moved = [&] {
    (void)ApplyBlocking(store, {{"rl:key:a", kHundredPerHour, 1}});
    return TokensOn(setup, new_master, "rl:key:a", kHundredPerHour) < tokens_then;
  };
  EXPECT_TRUE(WaitUntil(moved, std::chrono::seconds(5)))
      << "no check reached the new master; " << store.LastError();
}

TEST(RedisSentinelTest, AllSentinelsDownMeansTheFailurePolicyThenRecovery) {
  RedisSentinels setup;
  RedisStore store(setup.Options());
  ASSERT_TRUE(store.WaitReady(std::chrono::seconds(5)));
  LimiterOptions closed;
  closed.failure = FailurePolicy::kClosed;
  auto limiter =
      Limiter::Create({{"per-key", "key", "", kHundredPerHour, 1}}, closed, Unowned(store));
  ASSERT_TRUE(limiter.ok());
  for (size_t i = 0; i < setup.sentinels(); ++i) setup.KillSentinel(i);
  // The connection to the master lives on; cut it, and no sentinel can say where to go.
  setup.Client(setup.MasterPort())->Command({"CLIENT", "KILL", "TYPE", "normal"});
  // The first failures may be the cut connection's own; the store then asks the sentinels again
  // on every attempt, and says that none of them answered.
  auto sentinels_blamed = [&] { return store.LastError().find("sentinel") != std::string::npos; };
  Decision during;
  WaitUntil(
      [&] {
        during = (*limiter)->CheckBlocking({{"key", "k"}});
        return !during.checked && sentinels_blamed();
      },
      std::chrono::seconds(3));
  EXPECT_FALSE(during.checked);
  EXPECT_FALSE(during.allowed);  // failing closed
  EXPECT_TRUE(sentinels_blamed()) << store.LastError();
  for (size_t i = 0; i < setup.sentinels(); ++i) setup.StartSentinel(i);
  EXPECT_TRUE(store.WaitReady(std::chrono::seconds(10))) << store.LastError();
  EXPECT_TRUE((*limiter)->CheckBlocking({{"key", "k"}}).checked);
}

TEST(RedisSentinelTest, ATlsSetupCountsAndFailsOver) {
  RedisSentinels setup(1, 3, &testing::TlsCertificates::Shared());
  RedisStore store(setup.Options());
  ASSERT_TRUE(store.WaitReady(std::chrono::seconds(5))) << store.LastError();
  auto replies = ApplyBlocking(store, {{"rl:key:tls", kHundredPerHour, 1}});
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  EXPECT_EQ(replies->front().remaining, 99);
  const uint16_t new_master = setup.Failover();
  Result<std::vector<BucketReply>> after = Status::Unavailable("not yet asked");
  const double tokens_then = TokensOn(setup, new_master, "rl:key:tls", kHundredPerHour);
  auto moved = [&] {
    after = ApplyBlocking(store, {{"rl:key:tls", kHundredPerHour, 1}});
    return TokensOn(setup, new_master, "rl:key:tls", kHundredPerHour) < tokens_then;
  };
  ASSERT_TRUE(WaitUntil(moved, std::chrono::seconds(5)))
      << "no check reached the new master; " << store.LastError();
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->front().remaining, 98);  // the replica had the first count over TLS
}

}  // namespace
}  // namespace sluice
