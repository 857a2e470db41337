// The local counts in front of a real redis-server under a flood of distinct clients (an attacker
// rotating API keys): the buckets held stay at the bound and memory stays flat, a real client's
// count stays exact, and counts owed while Redis is down are never forgotten.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <iostream>
#include <memory>
#include <string>

#include "sluice/local_counting_store.h"
#include "sluice/redis_store.h"
#include "support/apply_blocking.h"
#include "support/manual_clock.h"
#include "support/redis_server.h"
#include "support/resident_memory.h"

namespace sluice {
namespace {

using testing::ApplyBlocking;
using testing::RedisServer;
using testing::ResidentBytes;

const Limit kHundredPerDay{100, 100, 86'400'000};
constexpr size_t kBound = 50'000;
// Ten million distinct keys in all. With Redis up, each one's count is synced and Redis takes it
// (a script call each: most of this test's time), and two bounds' worth are forgotten; with Redis
// down, the bound fills with buckets that owe, and every key after that is refused at once.
constexpr int64_t kWhileUp = 3 * kBound;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int64_t kWhileDown = 1'000'000 - kWhileUp;  // the sanitizers slow every op
#else
constexpr int64_t kWhileDown = 10'000'000 - kWhileUp;
#endif

BucketOp Synced(const std::string& value, int64_t cost) {
  BucketOp op{"rl:key:" + value, kHundredPerDay, cost};
  op.counting.mode = Counting::kSynced;
  return op;
}

// What `store` answers for one synced take; local decisions and refusals come inline.
Result<BucketReply> Take(LocalCountingStore& store, const std::string& value, int64_t cost = 1) {
  Result<BucketReply> reply = Status::Unavailable("no answer inline");
  store.Apply({Synced(value, cost)}, [&](Result<std::vector<BucketReply>> r) {
    reply = r.ok() ? Result<BucketReply>(r->front()) : Result<BucketReply>(r.status());
  });
  return reply;
}

class LocalCountingFloodTest : public ::testing::Test {
 protected:
  LocalCountingFloodTest() {
    RedisOptions options = server_.Options();
    // A tick's syncs (up to a bound of them) go at once and are all answered: a sync that timed
    // out would be lost by design (it may have been applied), which is not what is tested here.
    options.max_in_flight = 2 * kBound;
    options.timeout = std::chrono::seconds(30);
    redis_ = std::make_shared<RedisStore>(options);
    EXPECT_TRUE(redis_->WaitReady(std::chrono::seconds(5)));
    local_ = std::make_unique<LocalCountingStore>(redis_, clock_, /*background=*/false, kBound);
  }

  // Moves to the next sync interval, sends what is due and waits for Redis's answers.
  void Tick() {
    clock_->Advance(1000);
    std::promise<void> answered;
    local_->Tick([&] { answered.set_value(); });
    answered.get_future().wait();
  }

  // What Redis holds for a bucket, looked at with a cost of 0.
  int64_t InRedis(const std::string& value) {
    auto replies = ApplyBlocking(*redis_, {{"rl:key:" + value, kHundredPerDay, 0}});
    EXPECT_TRUE(replies.ok()) << replies.status().ToString();
    return replies.ok() ? replies->front().remaining : -1;
  }

  // Redis bounded as docs/configuration.md says, the keys nearest to expire (to full) going
  // first, and too small for the flood.
  RedisServer server_{{"--maxmemory", "8mb", "--maxmemory-policy", "volatile-ttl"}};
  std::shared_ptr<RedisStore> redis_;
  std::shared_ptr<testing::ManualClock> clock_ = std::make_shared<testing::ManualClock>(0);
  std::unique_ptr<LocalCountingStore> local_;
};

TEST_F(LocalCountingFloodTest, TenMillionDistinctKeysStayWithinTheBoundAndOwedCountsStay) {
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(Take(*local_, "real", 60).ok());
  Tick();
  ASSERT_EQ(InRedis("real"), 40);

  // Redis up: each tick syncs half a bound of new keys, which may then be forgotten, nearest
  // to full first; the real client, 60 from full, is never the one.
  for (int64_t i = 0; i < kWhileUp; ++i) {
    ASSERT_TRUE(Take(*local_, "up-" + std::to_string(i)).ok()) << i;
    if ((i + 1) % (kBound / 2) == 0) Tick();
  }
  Tick();
  const size_t resident_at_bound = ResidentBytes();
  EXPECT_GE(local_->Stats().evictions, static_cast<uint64_t>(kWhileUp) + 1 - kBound);
  EXPECT_EQ(local_->Stats().refusals, 0u);
  // Redis forgot flood keys too, never the real client's, far from full.
  const std::string stats = server_.Client()->String({"INFO", "stats"});
  EXPECT_EQ(stats.find("evicted_keys:0\r"), std::string::npos) << stats;
  EXPECT_EQ(InRedis("real"), 40);
  EXPECT_EQ(InRedis("up-" + std::to_string(kWhileUp - 1)), 99);

  // Redis down. The real client keeps taking, decided locally; the flood's new buckets take the
  // place of settled ones until every bucket held owes Redis, and are refused after that.
  server_.Kill();
  for (int t = 0; t < 5; ++t) ASSERT_TRUE(Take(*local_, "real").ok());
  int64_t admitted = 0;
  for (int64_t i = 0; i < kWhileDown; ++i) {
    const Result<BucketReply> reply = Take(*local_, "down-" + std::to_string(i));
    if (reply.ok()) {
      ++admitted;
    } else {
      ASSERT_EQ(reply.status().code(), StatusCode::kResourceExhausted) << reply.status().ToString();
    }
    if (i == kBound / 2) Tick();  // the syncs fail: what they carried is owed still
  }
  for (int t = 0; t < 5; ++t) ASSERT_TRUE(Take(*local_, "real").ok());
  const size_t resident_at_end = ResidentBytes();
  EXPECT_EQ(admitted, static_cast<int64_t>(kBound) - 1);  // every bucket but the real one's
  EXPECT_EQ(local_->Stats().refusals, static_cast<uint64_t>(kWhileDown - admitted));

  // Redis back, empty (it has no persistence): every count owed arrives, whole. (Unbounded now:
  // the buckets owed are all as far from full, and Redis would evict some of them to look at.)
  server_.Start();
  server_.Client()->Command({"CONFIG", "SET", "maxmemory", "0"});
  ASSERT_TRUE(redis_->WaitReady(std::chrono::seconds(5)));
  Tick();
  EXPECT_EQ(InRedis("real"), 90);
  EXPECT_EQ(InRedis("down-0"), 99);
  EXPECT_EQ(InRedis("down-" + std::to_string(kBound - 2)), 99);
  EXPECT_TRUE(Take(*local_, "after").ok());

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << kWhileUp + kWhileDown << " distinct keys in " << seconds << " s; resident "
            << resident_at_bound / 1'000'000 << " MB at the bound, " << resident_at_end / 1'000'000
            << " MB at the end; " << local_->Stats().evictions << " evictions, "
            << local_->Stats().refusals << " refusals\n";
#if !defined(__SANITIZE_ADDRESS__)  // ASan's quarantine holds freed memory by design
  EXPECT_LT(static_cast<double>(resident_at_end), 1.05 * static_cast<double>(resident_at_bound));
#endif
}

}  // namespace
}  // namespace sluice
