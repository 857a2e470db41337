// One behavioural suite for buckets and decisions, run on every store: the in-process store, a
// real redis-server in both script modes, over TLS and over a Unix socket, a master found
// through Redis Sentinel, and a real Redis Cluster, plaintext and TLS, must decide alike.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <thread>

#include "sluice/cluster_store.h"
#include "sluice/limiter.h"
#include "sluice/local_counting_store.h"
#include "sluice/memory_store.h"
#include "sluice/redis_store.h"
#include "stores/store_conformance.h"
#include "support/apply_blocking.h"
#include "support/manual_clock.h"
#include "support/redis_cluster.h"
#include "support/redis_sentinels.h"
#include "support/redis_server.h"
#include "support/tls_certificates.h"
#include "support/wait_until.h"

namespace sluice {
namespace {

using conformance::kFivePerHour;
using conformance::kHundredPerHour;
using conformance::kTenPerHour;
using conformance::MadeStore;
using conformance::StoreConformanceTest;
using conformance::StoreUnderTest;
using testing::RedisCluster;
using testing::RedisSentinels;
using testing::RedisServer;
using testing::TlsCertificates;

// The milliseconds of TIME on the server behind `client` (kept open across readings).
std::function<int64_t()> ServerTime(const std::shared_ptr<testing::RedisClient>& client) {
  return [client] {
    testing::ReplyPtr time = client->Command({"TIME"});
    return std::stoll(time->element[0]->str) * 1000 + std::stoll(time->element[1]->str) / 1000;
  };
}

MadeStore InMemory() {
  auto clock = std::make_shared<testing::ManualClock>(1'000'000);
  return {nullptr, std::make_shared<MemoryStore>(clock), [clock] { return clock->NowMs(); }, clock};
}

// A store of type S on `options` once it is ready, keeping `backend`.
template <typename S, typename Options>
MadeStore MakeOn(std::shared_ptr<void> backend, std::unique_ptr<testing::RedisClient> timekeeper,
                 Options options, ScriptMode mode, BucketLayout layout = BucketLayout::kHash) {
  options.mode = mode;
  options.layout = layout;
  auto store = std::make_shared<S>(options);
  EXPECT_TRUE(store->WaitReady(std::chrono::seconds(5)));
  return {std::move(backend), store, ServerTime(std::move(timekeeper)), nullptr};
}

MadeStore OnServer(ScriptMode mode, BucketLayout layout = BucketLayout::kHash) {
  auto server = std::make_shared<RedisServer>();
  return MakeOn<RedisStore>(server, server->Client(), server->Options(), mode, layout);
}

// A server that serves TLS (with the test CA's certificate) beside its plaintext port.
MadeStore OnTlsServer() {
  const TlsCertificates& certificates = TlsCertificates::Shared();
  const uint16_t tls_port = testing::FreePort();
  auto server = std::make_shared<RedisServer>(certificates.ServerArgs(tls_port));
  RedisOptions options = server->Options();
  options.port = tls_port;
  options.tls = certificates.Trusting();
  return MakeOn<RedisStore>(server, server->Client(), options, ScriptMode::kEvalsha);
}

MadeStore OnUnixSocket() {
  const std::string path = "/tmp/sluice-test-" + std::to_string(testing::FreePort()) + ".sock";
  auto server = std::make_shared<RedisServer>(
      std::vector<std::string>{"--unixsocket", path, "--unixsocketperm", "700"});
  RedisOptions options = server->Options();
  options.unix_path = path;
  return MakeOn<RedisStore>(server, server->Client(), options, ScriptMode::kFunction);
}

// One sentinel setup (a master, a replica, three sentinels) for all the suite's tests, its
// master emptied before each.
MadeStore OnSentinels() {
  static RedisSentinels sentinels(1, 3);
  sentinels.Client(sentinels.MasterPort())->Command({"FLUSHALL"});
  return MakeOn<RedisStore>(nullptr, sentinels.Client(sentinels.MasterPort()), sentinels.Options(),
                            ScriptMode::kEvalsha);
}

// One cluster (three primaries, no replicas) per transport for all the suite's tests, emptied
// before each.
RedisCluster* SharedCluster(bool tls) {
  static std::unique_ptr<RedisCluster> plain;
  static std::unique_ptr<RedisCluster> over_tls;
  std::unique_ptr<RedisCluster>& shared = tls ? over_tls : plain;
  if (!shared) {
    shared = std::make_unique<RedisCluster>(3, 0, tls ? &TlsCertificates::Shared() : nullptr);
  }
  RedisCluster* cluster = shared.get();
  for (uint16_t port : cluster->ports()) cluster->Client(port)->Command({"FLUSHALL"});
  return cluster;
}

MadeStore OnCluster(ScriptMode mode, bool tls = false, BucketLayout layout = BucketLayout::kHash) {
  RedisCluster* cluster = SharedCluster(tls);
  return MakeOn<ClusterStore>(nullptr, cluster->Client(cluster->ports()[0]), cluster->Options(),
                              mode, layout);
}

// GCRA decides as the token bucket does, on every store, and a request whose rules use both
// algorithms is answered in one Apply (two script calls in one write on Redis).
TEST_P(StoreConformanceTest, GcraCountsDownLikeTheTokenBucket) {
  Rule per_key{"per-key", "key", "", kFivePerHour, 1};
  Rule per_ip{"per-ip", "ip", "", kTenPerHour, 1};
  per_key.algorithm = Algorithm::kGcra;
  auto limiter = MakeLimiter({per_key, per_ip});
  Request request{{"key", "ak_abc123"}, {"ip", "203.0.113.42"}};
  for (int i = 4; i >= 0; --i) {
    Decision d = limiter->CheckBlocking(request);
    ASSERT_TRUE(d.allowed) << d.error.ToString();
    ASSERT_EQ(d.verdicts.at(0).remaining, i);      // GCRA
    ASSERT_EQ(d.verdicts.at(1).remaining, i + 5);  // token bucket
  }
  Decision d = limiter->CheckBlocking(request);
  EXPECT_FALSE(d.allowed);
  EXPECT_GT(d.verdicts[0].retry_ms, 719'000);
  EXPECT_LE(d.verdicts[0].retry_ms, 720'000);
  EXPECT_EQ(d.retry_after_s, 720);
  EXPECT_EQ(Remaining("rl:gcra:key:ak_abc123", per_key.limit, Algorithm::kGcra), 0);
}

TEST_P(StoreConformanceTest, CountsDownThenRejectsWithRetry) {
  auto limiter = MakeLimiter({{"per-key", "key", "", kFivePerHour, 1}});
  Request request{{"key", "ak_abc123"}};
  for (int i = 4; i >= 0; --i) {
    Decision d = limiter->CheckBlocking(request);
    ASSERT_TRUE(d.allowed);
    ASSERT_EQ(d.verdicts.at(0).remaining, i);
  }
  Decision d = limiter->CheckBlocking(request);
  EXPECT_FALSE(d.allowed);
  EXPECT_TRUE(d.checked);
  // One token every 720 s; a little of it has already passed.
  EXPECT_GT(d.verdicts[0].retry_ms, 719'000);
  EXPECT_LE(d.verdicts[0].retry_ms, 720'000);
  EXPECT_EQ(d.retry_after_s, 720);
  EXPECT_EQ(d.rejecting, 0u);
}

TEST_P(StoreConformanceTest, CostTakesSeveralTokens) {
  auto limiter = MakeLimiter({{"heavy", "key", "", kTenPerHour, 4}});
  Request request{{"key", "k"}};
  EXPECT_EQ(limiter->CheckBlocking(request).verdicts[0].remaining, 6);
  EXPECT_EQ(limiter->CheckBlocking(request).verdicts[0].remaining, 2);
  Decision d = limiter->CheckBlocking(request);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.verdicts[0].remaining, 2);
}

TEST_P(StoreConformanceTest, RefillsOverTime) {
  // 10 tokens every 200 ms.
  auto limiter = MakeLimiter({{"fast", "key", "", {10, 10, 200}, 10}});
  Request request{{"key", "refill"}};
  EXPECT_TRUE(limiter->CheckBlocking(request).allowed);
  Decision d = limiter->CheckBlocking(request);
  EXPECT_FALSE(d.allowed);
  EXPECT_GT(d.verdicts[0].retry_ms, 0);
  EXPECT_LE(d.verdicts[0].retry_ms, 200);
  PassTime(250);
  EXPECT_TRUE(limiter->CheckBlocking(request).allowed);
}

TEST_P(StoreConformanceTest, EachClientAndRuleHasItsOwnBucket) {
  auto limiter = MakeLimiter({{"per-ip", "ip", "", kFivePerHour, 1},
                              {"per-ip-hourly", "ip", "ip-hourly", kHundredPerHour, 1},
                              {"per-key", "key", "", kTenPerHour, 1}});
  limiter->CheckBlocking({{"ip", "10.0.0.1"}, {"key", "a"}});
  limiter->CheckBlocking({{"ip", "10.0.0.1"}, {"key", "b"}});
  limiter->CheckBlocking({{"ip", "10.0.0.2"}, {"key", "a"}});
  EXPECT_EQ(Remaining("rl:ip:10.0.0.1", kFivePerHour), 3);
  EXPECT_EQ(Remaining("rl:ip-hourly:10.0.0.1", kHundredPerHour), 98);
  EXPECT_EQ(Remaining("rl:ip:10.0.0.2", kFivePerHour), 4);
  EXPECT_EQ(Remaining("rl:key:a", kTenPerHour), 8);
  EXPECT_EQ(Remaining("rl:key:b", kTenPerHour), 9);
}

TEST_P(StoreConformanceTest, RuleWithoutItsAttributeDoesNotApply) {
  auto limiter =
      MakeLimiter({{"per-ip", "ip", "", kFivePerHour, 1}, {"per-key", "key", "", kTenPerHour, 1}});
  Decision d = limiter->CheckBlocking({{"ip", "192.0.2.1"}});
  ASSERT_EQ(d.verdicts.size(), 1u);
  EXPECT_EQ(d.verdicts[0].rule, 0u);
  EXPECT_TRUE(limiter->CheckBlocking({{"unrelated", "x"}}).allowed);
}

TEST_P(StoreConformanceTest, ThreeRulesTightestAndRejecting) {
  auto limiter = MakeLimiter({{"per-ip", "ip", "", {1000, 1000, 60'000}, 1},
                              {"per-key", "key", "", kFivePerHour, 1},
                              {"per-tenant", "tenant", "", {10'000, 10'000, 3'600'000}, 1}});
  Request request{{"ip", "203.0.113.42"}, {"key", "ak_abc123"}, {"tenant", "org_acme"}};
  Decision d = limiter->CheckBlocking(request);
  EXPECT_TRUE(d.allowed);
  ASSERT_EQ(d.verdicts.size(), 3u);
  EXPECT_EQ(d.verdicts[*d.tightest].rule, 1u);
  EXPECT_EQ(d.verdicts[1].remaining, 4);
  for (int i = 0; i < 4; ++i) limiter->CheckBlocking(request);
  d = limiter->CheckBlocking(request);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.verdicts[*d.rejecting].rule, 1u);
  EXPECT_EQ(d.verdicts[*d.tightest].rule, 1u);
  EXPECT_EQ(d.retry_after_s, 720);
}

// Two rules where the second has one token left: the second request is rejected by it.
std::unique_ptr<Limiter> LocalLimiter(std::shared_ptr<Store> store, Counting mode, Limit limit) {
  Rule rule{"per-key", "key", "", limit, 1};
  rule.counting.mode = mode;
  auto limiter = Limiter::Create({rule}, {}, std::move(store));
  EXPECT_TRUE(limiter.ok()) << limiter.status().ToString();
  return std::move(limiter).value();
}

// Three gateways leasing from one bucket with four threads each: together they admit no more
// than the bucket, and what they held goes back when they stop.
TEST_P(StoreConformanceTest, LeasedGatewaysNeverAdmitMoreThanTheSharedBucket) {
  std::atomic<int> admitted{0};
  {
    std::vector<std::shared_ptr<LocalCountingStore>> gateways;
    std::vector<std::unique_ptr<Limiter>> limiters;
    for (int g = 0; g < 3; ++g) {
      gateways.push_back(std::make_shared<LocalCountingStore>(store_));
      limiters.push_back(LocalLimiter(gateways.back(), Counting::kLeased, kHundredPerHour));
    }
    std::vector<std::thread> threads;
    threads.reserve(12);
    for (int t = 0; t < 12; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 15; ++i) {
          admitted += limiters[static_cast<size_t>(t % 3)]->CheckBlocking({{"key", "hot"}}).allowed;
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_LE(admitted.load(), 100);
    EXPECT_GT(admitted.load(), 50);
  }
  EXPECT_EQ(admitted.load() + Remaining("rl:key:hot", kHundredPerHour), 100);
}

// Synced gateways each admit from what they know; a sync brings every count to the store.
TEST_P(StoreConformanceTest, SyncedGatewaysEnforceTheTotalsAfterASync) {
  std::vector<std::shared_ptr<LocalCountingStore>> gateways;
  std::vector<std::unique_ptr<Limiter>> limiters;
  for (int g = 0; g < 2; ++g) {
    gateways.push_back(std::make_shared<LocalCountingStore>(store_, nullptr, false));
    limiters.push_back(LocalLimiter(gateways.back(), Counting::kSynced, kTenPerHour));
  }
  const Request request{{"key", "synced"}};
  for (int i = 0; i < 4; ++i) {
    for (auto& limiter : limiters) ASSERT_TRUE(limiter->CheckBlocking(request).allowed);
  }
  EXPECT_EQ(Remaining("rl:key:synced", kTenPerHour), 10);  // nothing sent yet
  for (auto& gateway : gateways) {
    std::promise<void> synced;
    gateway->Flush([&] { synced.set_value(); });
    synced.get_future().wait();
  }
  EXPECT_EQ(Remaining("rl:key:synced", kTenPerHour), 2);
  // The last to sync knows that the bucket holds 2.
  EXPECT_TRUE(limiters[1]->CheckBlocking(request).allowed);
  EXPECT_TRUE(limiters[1]->CheckBlocking(request).allowed);
  EXPECT_FALSE(limiters[1]->CheckBlocking(request).allowed);
}

// A synced gateway goes on deciding from its own reckoning while Redis is down, refills
// included, and sends what it owes once Redis is back.
TEST(SyncedCountingOnRedisTest, DecidesWhileRedisIsDownAndSendsItsCountsWhenItReturns) {
  RedisServer server;
  auto options = server.Options();
  options.timeout = std::chrono::milliseconds(100);
  auto redis = std::make_shared<RedisStore>(options);
  ASSERT_TRUE(redis->WaitReady(std::chrono::seconds(5)));
  auto clock = std::make_shared<testing::ManualClock>(0);
  auto gateway = std::make_shared<LocalCountingStore>(redis, clock, false);
  const Limit ten_per_second{10, 10, 1000};
  auto limiter = LocalLimiter(gateway, Counting::kSynced, ten_per_second);
  auto flush = [&] {
    std::promise<void> flushed;
    gateway->Flush([&] { flushed.set_value(); });
    flushed.get_future().wait();
  };
  const Request request{{"key", "down"}};
  auto admit_all = [&] {
    int admitted = 0;
    while (limiter->CheckBlocking(request).allowed) ++admitted;
    return admitted;
  };
  server.Kill();
  EXPECT_GE(admit_all(), 10);
  clock->Advance(1100);
  EXPECT_GE(admit_all(), 10);  // a second's refill, counted here while Redis is down
  flush();
  EXPECT_EQ(gateway->Stats().sync_failures, 1u);

  server.Start();  // empty: a full bucket
  ASSERT_TRUE(redis->WaitReady(std::chrono::seconds(5)));
  flush();
  EXPECT_LT(std::stod(server.Client()->String({"HGET", "rl:key:down", "tokens"})), 1.0)
      << "what was admitted while Redis was down empties the bucket";
}

INSTANTIATE_TEST_SUITE_P(
    Stores, StoreConformanceTest,
    ::testing::Values(
        StoreUnderTest{"Memory", true, InMemory},
        StoreUnderTest{"RedisEvalsha", false, [] { return OnServer(ScriptMode::kEvalsha); }},
        StoreUnderTest{"RedisFunction", false, [] { return OnServer(ScriptMode::kFunction); }},
        StoreUnderTest{"RedisCompact", false,
                       [] { return OnServer(ScriptMode::kEvalsha, BucketLayout::kCompact); }},
        StoreUnderTest{"RedisTls", false, OnTlsServer},
        StoreUnderTest{"RedisUnixSocket", false, OnUnixSocket},
        StoreUnderTest{"Sentinel", false, OnSentinels},
        StoreUnderTest{"ClusterEvalsha", false, [] { return OnCluster(ScriptMode::kEvalsha); }},
        StoreUnderTest{"ClusterFunction", false, [] { return OnCluster(ScriptMode::kFunction); }},
        StoreUnderTest{"ClusterTls", false, [] { return OnCluster(ScriptMode::kEvalsha, true); }},
        StoreUnderTest{
            "ClusterCompactFunction", false,
            [] { return OnCluster(ScriptMode::kFunction, false, BucketLayout::kCompact); }}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sluice
