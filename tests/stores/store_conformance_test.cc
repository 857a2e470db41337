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
#include "support/apply_blocking.h"
#include "support/manual_clock.h"
#include "support/redis_cluster.h"
#include "support/redis_sentinels.h"
#include "support/redis_server.h"
#include "support/tls_certificates.h"
#include "support/wait_until.h"

namespace sluice {
namespace {

using testing::RedisCluster;
using testing::RedisSentinels;
using testing::RedisServer;
using testing::TlsCertificates;

// A store, and what it runs on (a server of its own, or nothing when it is shared or in
// process): the store goes first.
struct MadeStore {
  std::shared_ptr<void> backend;
  std::shared_ptr<Store> store;
  // The time the store's buckets read, in milliseconds: the server's (TIME), or the memory
  // store's clock, which `clock` moves.
  std::function<int64_t()> now_ms;
  std::shared_ptr<testing::ManualClock> clock;
};

// The milliseconds of TIME on the server behind `client` (kept open across readings).
std::function<int64_t()> ServerTime(std::shared_ptr<testing::RedisClient> client) {
  return [client] {
    testing::ReplyPtr time = client->Command({"TIME"});
    return std::stoll(time->element[0]->str) * 1000 + std::stoll(time->element[1]->str) / 1000;
  };
}

MadeStore InMemory() {
  auto clock = std::make_shared<testing::ManualClock>(1'000'000);
  return {nullptr, std::make_shared<MemoryStore>(clock), [clock] { return clock->NowMs(); }, clock};
}

struct StoreKind {
  const char* name;
  bool in_process;  // the memory store: all-or-nothing never falls back
  std::function<MadeStore()> make;
};

// Names the store in test output instead of dumping the struct's bytes.
void PrintTo(const StoreKind& kind, std::ostream* os) { *os << kind.name; }

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

class StoreConformanceTest : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override {
    made_ = GetParam().make();
    store_ = made_.store;
  }

  // Lets `ms` of the store's time pass: the memory store's clock is moved; a server's clock is
  // its own (TIME), which the test waits for.
  void PassTime(int64_t ms) {
    if (made_.clock) return made_.clock->Advance(ms);
    const int64_t until = made_.now_ms() + ms;
    ASSERT_TRUE(testing::WaitUntil([&] { return made_.now_ms() >= until; },
                                   std::chrono::milliseconds(ms + 5000)));
  }

  std::unique_ptr<Limiter> MakeLimiter(std::vector<Rule> rules,
                                       MultiRulePolicy policy = MultiRulePolicy::kChargeAll) {
    LimiterOptions options;
    options.policy = policy;
    return MakeLimiter(std::move(rules), options);
  }

  std::unique_ptr<Limiter> MakeLimiter(std::vector<Rule> rules, const LimiterOptions& options) {
    auto limiter = Limiter::Create(std::move(rules), options, store_);
    EXPECT_TRUE(limiter.ok()) << limiter.status().ToString();
    return std::move(limiter).value();
  }

  // Tokens left in a bucket, looked at with a cost of 0.
  int64_t Remaining(const std::string& key, Limit limit,
                    Algorithm algorithm = Algorithm::kTokenBucket) {
    auto replies = testing::ApplyBlocking(*store_, {{key, limit, 0, {}, algorithm}});
    EXPECT_TRUE(replies.ok()) << replies.status().ToString();
    return replies.ok() ? replies->front().remaining : -1;
  }

  MadeStore made_;  // outlives store_; its backend outlives its store
  std::shared_ptr<Store> store_;
};

// Slow refills (per hour) so that the time a test takes gives no token back.
const Limit kFivePerHour{5, 5, 3'600'000};
const Limit kTenPerHour{10, 10, 3'600'000};
const Limit kHundredPerHour{100, 100, 3'600'000};

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
struct PolicyCase {
  MultiRulePolicy policy;
  int64_t first_left;   // tokens left in the first rule's bucket after the rejected request
  int64_t second_left;  // and in the second's
  bool first_charged;   // the rejected request's verdict for the first rule
};

TEST_P(StoreConformanceTest, MultiRulePoliciesChargeExactly) {
  const PolicyCase cases[] = {
      {MultiRulePolicy::kChargeAll, 8, 0, true},
      {MultiRulePolicy::kRefund, 9, 0, false},
  };
  int n = 0;
  for (const PolicyCase& c : cases) {
    SCOPED_TRACE(static_cast<int>(c.policy));
    const std::string id = "policy" + std::to_string(n++);
    auto limiter = MakeLimiter(
        {{"wide", "ip", "", kTenPerHour, 1}, {"narrow", "key", "", {1, 1, 3'600'000}, 1}},
        c.policy);
    Request request{{"ip", id}, {"key", id}};
    ASSERT_TRUE(limiter->CheckBlocking(request).allowed);
    Decision d = limiter->CheckBlocking(request);
    ASSERT_FALSE(d.allowed);
    ASSERT_EQ(d.verdicts.size(), 2u);
    EXPECT_EQ(d.verdicts[0].charged, c.first_charged);
    EXPECT_FALSE(d.verdicts[1].charged);
    EXPECT_EQ(Remaining("rl:ip:" + id, kTenPerHour), c.first_left);
    EXPECT_EQ(Remaining("rl:key:" + id, {1, 1, 3'600'000}), c.second_left);
  }
}

TEST_P(StoreConformanceTest, StopAtFirstChargesNothingAfterTheRejection) {
  auto limiter =
      MakeLimiter({{"narrow", "key", "", {1, 1, 3'600'000}, 1}, {"wide", "ip", "", kTenPerHour, 1}},
                  MultiRulePolicy::kStopAtFirst);
  Request request{{"ip", "stop"}, {"key", "stop"}};
  ASSERT_TRUE(limiter->CheckBlocking(request).allowed);
  Decision d = limiter->CheckBlocking(request);
  EXPECT_FALSE(d.allowed);
  ASSERT_EQ(d.verdicts.size(), 1u);  // the second rule was never asked
  EXPECT_EQ(Remaining("rl:ip:stop", kTenPerHour), 9);
}

TEST_P(StoreConformanceTest, RefundNeverRaisesABucketAboveCapacity) {
  // Rejected by "narrow" while "wide" refills to full: the refund must stop at capacity.
  auto limiter =
      MakeLimiter({{"wide", "ip", "", {3, 3, 300}, 1}, {"narrow", "key", "", {1, 1, 3'600'000}, 1}},
                  MultiRulePolicy::kRefund);
  Request request{{"ip", "cap"}, {"key", "cap"}};
  ASSERT_TRUE(limiter->CheckBlocking(request).allowed);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(limiter->CheckBlocking(request).allowed);
  PassTime(350);
  EXPECT_FALSE(limiter->CheckBlocking(request).allowed);
  EXPECT_EQ(Remaining("rl:ip:cap", {3, 3, 300}), 3);
}

TEST_P(StoreConformanceTest, ManyThreadsAdmitExactlyTheCapacity) {
  auto limiter = MakeLimiter({{"per-key", "key", "", kHundredPerHour, 1}});
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 50; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        if (limiter->CheckBlocking({{"key", "race"}}).allowed) admitted.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 100);
}

Rule FixedWindowRule(std::string attribute, Limit limit) {
  Rule rule{"window", std::move(attribute), "", limit, 1};
  rule.algorithm = Algorithm::kFixedWindow;
  return rule;
}

TEST_P(StoreConformanceTest, FixedWindowCountsUpToItsCapacityUntilTheWindowEnds) {
  auto limiter = MakeLimiter({FixedWindowRule("key", kFivePerHour)});
  Request request{{"key", "ak_abc123"}};
  for (int i = 4; i >= 0; --i) {
    Decision d = limiter->CheckBlocking(request);
    ASSERT_TRUE(d.allowed) << d.error.ToString();
    ASSERT_EQ(d.verdicts.at(0).remaining, i);
  }
  Decision d = limiter->CheckBlocking(request);
  EXPECT_FALSE(d.allowed);
  // Until the top of the hour, whenever that is: the window is aligned to the clock.
  EXPECT_GT(d.verdicts[0].retry_ms, 0);
  EXPECT_LE(d.verdicts[0].retry_ms, 3'600'000);
  EXPECT_EQ(Remaining("rl:fw:key:ak_abc123", kFivePerHour, Algorithm::kFixedWindow), 0);
}

// The fixed window's known flaw, shown: five a second, yet ten requests pass within a fraction
// of a second, five at the end of one window and five at the start of the next.
TEST_P(StoreConformanceTest, FixedWindowLetsTwiceItsLimitThroughAroundAWindowEdge) {
  const Limit five_per_second{5, 5, 1'000};
  auto limiter = MakeLimiter({FixedWindowRule("key", five_per_second)});
  using Steady = std::chrono::steady_clock;
  // A loaded machine may sleep past the moment aimed at: a few attempts, each on a fresh key.
  for (int attempt = 0; attempt < 4; ++attempt) {
    // The time left in this window, from a probe counter emptied on purpose.
    const std::string probe = "rl:fw:probe:" + std::to_string(attempt);
    auto probed =
        testing::ApplyBlocking(*store_, {{probe, five_per_second, 5, {}, Algorithm::kFixedWindow}});
    ASSERT_TRUE(probed.ok()) << probed.status().ToString();
    auto left =
        testing::ApplyBlocking(*store_, {{probe, five_per_second, 1, {}, Algorithm::kFixedWindow}});
    ASSERT_TRUE(left.ok());
    ASSERT_FALSE(left->front().allowed);
    // Sleep to 150 ms before the end of the next window.
    PassTime(left->front().retry_ms + 850);
    const Request request{{"key", "edge" + std::to_string(attempt)}};
    const Steady::time_point first = Steady::now();
    int admitted = 0;
    for (int i = 0; i < 5; ++i) admitted += limiter->CheckBlocking(request).allowed ? 1 : 0;
    Decision full = limiter->CheckBlocking(request);
    ASSERT_FALSE(full.allowed);
    PassTime(full.verdicts[0].retry_ms);
    for (int i = 0; i < 5; ++i) admitted += limiter->CheckBlocking(request).allowed ? 1 : 0;
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - first);
    if (took.count() >= 500) continue;  // the sleeps overshot: not the moment aimed at
    EXPECT_EQ(admitted, 10) << "in " << took.count() << " ms";
    return;
  }
  FAIL() << "four attempts overslept the window's edge";
}

// All-or-nothing, with each algorithm: when one rule rejects, no rule is charged, in one call.
// The keys share a hash tag (the same value), so a cluster takes them in one slot.
TEST_P(StoreConformanceTest, AllOrNothingChargesNoRuleWhenOneRejects) {
  for (Algorithm algorithm : {Algorithm::kTokenBucket, Algorithm::kGcra, Algorithm::kFixedWindow}) {
    SCOPED_TRACE(static_cast<int>(algorithm));
    Rule wide{"wide", "ip", "", kTenPerHour, 1};
    Rule narrow{"narrow", "key", "", {1, 1, 3'600'000}, 1};
    Rule shadow{"shadow", "tenant", "", {1, 1, 3'600'000}, 1};
    shadow.shadow = true;
    for (Rule* rule : {&wide, &narrow, &shadow}) rule->algorithm = algorithm;
    LimiterOptions options;
    options.policy = MultiRulePolicy::kAllOrNothing;
    options.hash_tag_values = true;
    options.key_prefix = "aon" + std::to_string(static_cast<int>(algorithm)) + ":";
    auto limiter = MakeLimiter({wide, narrow, shadow}, options);
    const Request request{{"ip", "v"}, {"key", "v"}, {"tenant", "v"}};

    Decision first = limiter->CheckBlocking(request);
    ASSERT_TRUE(first.allowed) << first.error.ToString();
    for (const RuleVerdict& v : first.verdicts) EXPECT_TRUE(v.charged);
    // The shadow rule now rejects too, and decides nothing.
    Decision second = limiter->CheckBlocking(request);
    ASSERT_FALSE(second.allowed);
    EXPECT_FALSE(second.fell_back_to_refund);
    ASSERT_EQ(second.verdicts.size(), 3u);
    EXPECT_TRUE(second.verdicts[0].allowed);
    EXPECT_EQ(second.verdicts[0].remaining, 9);  // untouched, not 8
    EXPECT_FALSE(second.verdicts[1].allowed);
    EXPECT_GT(second.verdicts[1].retry_ms, 0);
    for (const RuleVerdict& v : second.verdicts) EXPECT_FALSE(v.charged);
    const std::string prefix = options.key_prefix + (algorithm == Algorithm::kGcra ? "gcra:"
                                                     : algorithm == Algorithm::kFixedWindow ? "fw:"
                                                                                            : "");
    EXPECT_EQ(Remaining(prefix + "ip:{v}", kTenPerHour, algorithm), 9);
  }
}

// A shadow rule's rejection does not stop the charges.
TEST_P(StoreConformanceTest, AllOrNothingChargesPastAShadowRejection) {
  Rule wide{"wide", "ip", "", kTenPerHour, 1};
  Rule shadow{"shadow", "key", "", {1, 1, 3'600'000}, 1};
  shadow.shadow = true;
  LimiterOptions options;
  options.policy = MultiRulePolicy::kAllOrNothing;
  options.hash_tag_values = true;
  auto limiter = MakeLimiter({wide, shadow}, options);
  const Request request{{"ip", "s"}, {"key", "s"}};
  ASSERT_TRUE(limiter->CheckBlocking(request).allowed);
  Decision d = limiter->CheckBlocking(request);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.shadow_rejections, 1u);
  EXPECT_EQ(Remaining("rl:ip:{s}", kTenPerHour), 8);
}

// Where one step cannot hold every rule (keys in several cluster slots; on Redis, rules of
// different algorithms, which are different scripts) the check is made as refund makes it, and
// the decision says so; the charges come out the same.
TEST_P(StoreConformanceTest, AllOrNothingFallsBackToRefundAndSaysSo) {
  Rule wide{"wide", "ip", "", kTenPerHour, 1};
  wide.algorithm = Algorithm::kGcra;
  Rule narrow{"narrow", "key", "", {1, 1, 3'600'000}, 1};
  auto limiter = MakeLimiter({wide, narrow}, MultiRulePolicy::kAllOrNothing);
  const Request request{{"ip", "fb"}, {"key", "fb"}};
  ASSERT_TRUE(limiter->CheckBlocking(request).allowed);
  Decision d = limiter->CheckBlocking(request);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.fell_back_to_refund, !GetParam().in_process);
  EXPECT_FALSE(d.verdicts[0].charged);
  EXPECT_EQ(Remaining("rl:gcra:ip:fb", kTenPerHour, Algorithm::kGcra), 9);
}

// A take of up to its cost grants what the bucket holds, beside an ordinary op in one call.
TEST_P(StoreConformanceTest, TakeUpToGrantsWhatTheBucketHolds) {
  BucketOp up_to{"rl:upto:{a}", kFivePerHour, 3};
  up_to.up_to = true;
  const BucketOp plain{"rl:plain:{a}", kFivePerHour, 1};
  std::vector<int64_t> granted;
  for (int i = 0; i < 3; ++i) {
    auto replies = testing::ApplyBlocking(*store_, {up_to, plain});
    ASSERT_TRUE(replies.ok()) << replies.status().ToString();
    granted.push_back((*replies)[0].granted);
    EXPECT_EQ((*replies)[0].allowed, (*replies)[0].granted == 3);
    EXPECT_EQ((*replies)[1].granted, 0);
    if (i == 2) {
      EXPECT_GT((*replies)[0].retry_ms, 0);  // the time until one token is back
    }
  }
  EXPECT_EQ(granted, (std::vector<int64_t>{3, 2, 0}));
  EXPECT_EQ(Remaining("rl:upto:{a}", kFivePerHour), 0);
}

// A debt op (a cost reported after the fact, an Envoy hit) takes all of its cost past empty,
// bounded at one period's tokens, and the bucket refuses everything until it is out of debt;
// the reply's reset_ms is the time until full, on every store alike.
TEST_P(StoreConformanceTest, ADebtIsTakenWholeAndRefusesUntilRepaid) {
  BucketOp report{"rl:debt:{a}", kTenPerHour, 7};
  report.debt = true;
  auto first = testing::ApplyBlocking(*store_, {report});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->front().allowed);
  EXPECT_EQ(first->front().remaining, 3);
  EXPECT_NEAR(first->front().reset_ms, 7 * 360'000, 1000);
  report.cost = 1'000;  // far past the capacity: owes one period's tokens at most
  auto second = testing::ApplyBlocking(*store_, {report});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_FALSE(second->front().allowed);
  EXPECT_EQ(second->front().remaining, 0);
  EXPECT_NEAR(second->front().retry_ms, 3'600'000, 1000);  // out of debt in an hour
  EXPECT_NEAR(second->front().reset_ms, 7'200'000, 1000);  // 20 tokens short of full
  auto look = testing::ApplyBlocking(*store_, {{"rl:debt:{a}", kTenPerHour, 0}});
  ASSERT_TRUE(look.ok());
  EXPECT_FALSE(look->front().allowed);  // even a look, while in debt
  report.cost = -1;
  EXPECT_EQ(testing::ApplyBlocking(*store_, {report}).status().code(),
            StatusCode::kInvalidArgument);
}

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
        StoreKind{"Memory", true, InMemory},
        StoreKind{"RedisEvalsha", false, [] { return OnServer(ScriptMode::kEvalsha); }},
        StoreKind{"RedisFunction", false, [] { return OnServer(ScriptMode::kFunction); }},
        StoreKind{"RedisCompact", false,
                  [] { return OnServer(ScriptMode::kEvalsha, BucketLayout::kCompact); }},
        StoreKind{"RedisTls", false, OnTlsServer},
        StoreKind{"RedisUnixSocket", false, OnUnixSocket},
        StoreKind{"Sentinel", false, OnSentinels},
        StoreKind{"ClusterEvalsha", false, [] { return OnCluster(ScriptMode::kEvalsha); }},
        StoreKind{"ClusterFunction", false, [] { return OnCluster(ScriptMode::kFunction); }},
        StoreKind{"ClusterTls", false, [] { return OnCluster(ScriptMode::kEvalsha, true); }},
        StoreKind{"ClusterCompactFunction", false,
                  [] { return OnCluster(ScriptMode::kFunction, false, BucketLayout::kCompact); }}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sluice
