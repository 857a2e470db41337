// The cluster store against a real Redis Cluster (three primaries, each with a replica): the
// slot function against the server's, exactness under races, lost scripts, resharding under
// load, a failover and a shard down.
#include "sluice/cluster_store.h"

#include <gtest/gtest.h>

#include <fmt/core.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "stores/cluster/key_slot.h"
#include "support/apply_blocking.h"
#include "support/redis_cluster.h"
#include "support/wait_until.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;
using testing::ApplyBlocking;
using testing::RedisClient;
using testing::RedisCluster;
using testing::ReplyPtr;
using testing::WaitUntil;
using RealClock = std::chrono::steady_clock;

// A bucket that refills over about eight years: a test's duration gives nothing back.
Limit NoRefill(int64_t capacity) {
  return {capacity, std::max<int64_t>(1, capacity / 3000), 86'400'000};
}

std::shared_ptr<ClusterStore> Connect(const ClusterOptions& options) {
  auto store = std::make_shared<ClusterStore>(options);
  EXPECT_TRUE(store->WaitReady(std::chrono::seconds(10)));
  return store;
}

// `count` keys whose slots the primary on `port` serves.
std::vector<std::string> KeysOn(const RedisCluster& cluster, uint16_t port, size_t count,
                                const std::string& prefix) {
  std::vector<std::string> keys;
  for (int i = 0; keys.size() < count; ++i) {
    std::string key = "rl:" + prefix + ":" + std::to_string(i);
    if (cluster.PrimaryOf(KeySlot(key)) == port) keys.push_back(std::move(key));
  }
  return keys;
}

int64_t Remaining(Store& store, const std::string& key, Limit limit) {
  auto replies = ApplyBlocking(store, {{key, limit, 0}});
  EXPECT_TRUE(replies.ok()) << replies.status().ToString();
  return replies.ok() ? replies->front().remaining : -1;
}

// 10,000 random keys (braces and bytes of every kind among them) through one `redis-cli` run of
// `CLUSTER KEYSLOT`, each key written byte by byte as \xHH so that any byte survives the shell.
TEST(KeySlotAgainstRedisTest, TenThousandRandomKeysHashAsRedisCliSays) {
  RedisCluster cluster(1, 0);
  std::mt19937 rng(20261202);
  std::uniform_int_distribution<int> length(0, 40);
  const std::string alphabet = "abcxyz019:{}{}{}-_ \x01\x7f\xff\"\\";
  std::uniform_int_distribution<size_t> letter(0, alphabet.size() - 1);
  std::vector<std::string> keys;
  const std::string commands = "/tmp/sluice-keyslot-" + std::to_string(getpid()) + ".txt";
  {
    std::ofstream out(commands);
    for (int i = 0; i < 10'000; ++i) {
      std::string key;
      for (int n = length(rng); n > 0; --n) key.push_back(alphabet[letter(rng)]);
      out << "CLUSTER KEYSLOT \"";
      for (const unsigned char c : key) out << fmt::format("\\x{:02x}", c);
      out << "\"\n";
      keys.push_back(std::move(key));
    }
  }
  const std::string command =
      "redis-cli -p " + std::to_string(cluster.ports().front()) + " < " + commands + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::vector<long> slots;
  char line[64];
  while (fgets(line, sizeof line, pipe) != nullptr) slots.push_back(std::strtol(line, nullptr, 10));
  pclose(pipe);
  std::remove(commands.c_str());
  ASSERT_EQ(slots.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(KeySlot(keys[i]), slots[i]) << "key #" << i;
  }
}

class ClusterStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new RedisCluster(3, 1); }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  static RedisCluster* cluster_;
};
RedisCluster* ClusterStoreTest::cluster_ = nullptr;

TEST_F(ClusterStoreTest, RacingStoresAdmitExactlyWhatTheBucketsAllow) {
  // Twelve buckets, four on each primary, and checks that touch two of them at once.
  std::vector<std::string> keys;
  for (uint16_t primary : cluster_->Primaries()) {
    for (std::string& k : KeysOn(*cluster_, primary, 4, "race")) keys.push_back(std::move(k));
  }
  ASSERT_EQ(keys.size(), 12u);
  const Limit limit = NoRefill(40);
  std::vector<std::shared_ptr<ClusterStore>> stores;
  stores.reserve(4);
  for (int i = 0; i < 4; ++i) stores.push_back(Connect(cluster_->Options()));
  std::map<std::string, std::atomic<int>> admitted;
  for (const auto& k : keys) admitted[k] = 0;
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  threads.reserve(12);
  for (int t = 0; t < 12; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::uniform_int_distribution<size_t> pick(0, keys.size() - 1);
      for (int i = 0; i < 100; ++i) {
        const size_t a = pick(rng);
        const size_t b = (a + 1 + pick(rng) % (keys.size() - 1)) % keys.size();
        auto replies = ApplyBlocking(*stores[t % 4], {{keys[a], limit, 1}, {keys[b], limit, 1}});
        if (!replies.ok()) {
          ++errors;
          continue;
        }
        if ((*replies)[0].allowed) ++admitted[keys[a]];
        if ((*replies)[1].allowed) ++admitted[keys[b]];
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors, 0);
  // 2,400 takes over 12 buckets: every bucket is drained, and none gives more than it holds.
  for (const auto& [key, count] : admitted) EXPECT_EQ(count, 40) << key;
}

// Checks bound for one primary share script calls whatever their slots (the scripts are flagged
// allow-cross-slot-keys and declare one slot's keys): 1,000 checks on 1,000 keys of many slots,
// all in flight at once, take far fewer calls than checks, and each is decided on its own bucket.
TEST_F(ClusterStoreTest, ChecksOfManySlotsOnOnePrimaryShareScriptCalls) {
  const uint16_t primary = cluster_->Primaries().front();
  for (ScriptMode mode : {ScriptMode::kEvalsha, ScriptMode::kFunction}) {
    SCOPED_TRACE(mode == ScriptMode::kEvalsha ? "evalsha" : "function");
    const std::vector<std::string> keys =
        KeysOn(*cluster_, primary, 1000, "share" + std::to_string(static_cast<int>(mode)));
    std::set<uint16_t> slots;
    for (const std::string& key : keys) slots.insert(KeySlot(key));
    ASSERT_GT(slots.size(), 500u);
    ClusterOptions options = cluster_->Options();
    options.mode = mode;
    auto store = Connect(options);
    const Limit limit = NoRefill(5);
    ASSERT_TRUE(ApplyBlocking(*store, {{keys.front(), limit, 0}}).ok());  // connected
    RedisClient(primary).Command({"CONFIG", "RESETSTAT"});
    std::mutex mutex;
    std::condition_variable all_done;
    size_t done = 0;
    size_t allowed = 0;
    for (const std::string& key : keys) {
      store->Apply({{key, limit, 2}}, [&](Result<std::vector<BucketReply>> replies) {
        std::lock_guard lock(mutex);
        EXPECT_TRUE(replies.ok()) << replies.status().ToString();
        if (replies.ok() && replies->front().allowed && replies->front().remaining == 3) {
          ++allowed;
        }
        if (++done == keys.size()) all_done.notify_one();
      });
    }
    std::unique_lock lock(mutex);
    ASSERT_TRUE(
        all_done.wait_for(lock, std::chrono::seconds(10), [&] { return done == keys.size(); }));
    EXPECT_EQ(allowed, keys.size());
    lock.unlock();
    const std::string stats = RedisClient(primary).String({"INFO", "commandstats"});
    const std::string command =
        mode == ScriptMode::kEvalsha ? "cmdstat_evalsha:calls=" : "cmdstat_fcall:calls=";
    const size_t at = stats.find(command);
    ASSERT_NE(at, std::string::npos) << stats;
    const long calls = std::strtol(stats.c_str() + at + command.size(), nullptr, 10);
    EXPECT_LT(calls, static_cast<long>(keys.size() / 4)) << "script calls for 1,000 checks";
    for (size_t i = 0; i < keys.size(); i += 97) EXPECT_EQ(Remaining(*store, keys[i], limit), 3);
  }
}

// Checks on a key of every primary from four threads while each primary's scripts (or
// functions, by `mode`) are flushed five times: none fails.
void ExpectNoCheckFailsThroughFlushes(RedisCluster& cluster, ScriptMode mode) {
  ClusterOptions options = cluster.Options();
  options.mode = mode;
  auto store = Connect(options);
  std::vector<std::string> keys;
  for (uint16_t primary : cluster.Primaries()) {
    keys.push_back(KeysOn(cluster, primary, 1, "flush" + std::to_string(int(mode)))[0]);
  }
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0};
  std::atomic<int> checks{0};
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      while (!stop) {
        std::vector<BucketOp> ops;
        ops.reserve(keys.size());
        for (const auto& k : keys) ops.push_back({k, NoRefill(1'000'000), 1});
        if (!ApplyBlocking(*store, std::move(ops)).ok()) ++errors;
        ++checks;
      }
    });
  }
  const std::vector<std::string> flush = mode == ScriptMode::kEvalsha
                                             ? std::vector<std::string>{"SCRIPT", "FLUSH"}
                                             : std::vector<std::string>{"FUNCTION", "FLUSH"};
  for (int round = 0; round < 5; ++round) {
    for (uint16_t primary : cluster.Primaries()) cluster.Client(primary)->Command(flush);
    // The load meets each flush before the next one.
    const int seen = checks;
    EXPECT_TRUE(WaitUntil([&] { return checks >= seen + 20; }));
  }
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_GT(checks, 0);
  EXPECT_EQ(errors, 0) << "mode " << int(mode);
}

TEST_F(ClusterStoreTest, EveryPrimaryReloadsItsScriptAfterAFlush) {
  ExpectNoCheckFailsThroughFlushes(*cluster_, ScriptMode::kEvalsha);
  ExpectNoCheckFailsThroughFlushes(*cluster_, ScriptMode::kFunction);
}

// A primary that restarts within the node timeout comes back as the same primary, with neither
// its data nor its script: checks on it resume by themselves once it answers.
TEST_F(ClusterStoreTest, APrimaryRestartedWithAnEmptyScriptCacheServesAgain) {
  auto store = Connect(cluster_->Options());
  const uint16_t primary = cluster_->Primaries()[0];
  const std::string key = KeysOn(*cluster_, primary, 1, "restart")[0];
  ASSERT_TRUE(ApplyBlocking(*store, {{key, NoRefill(100), 1}}).ok());
  cluster_->Kill(primary);
  cluster_->Start(primary);
  const bool served = WaitUntil(
      [&] {
        return ApplyBlocking(*store, {{key, NoRefill(100), 1}}).ok();
      },
      milliseconds(5000));
  EXPECT_TRUE(served) << "the restarted primary was not used again";
  EXPECT_EQ(cluster_->PrimaryOf(KeySlot(key)), primary) << "it failed over instead";
}

TEST_F(ClusterStoreTest, ReplicaWaitsFollowTheCheck) {
  auto store = Connect(cluster_->Options());
  const std::string key = KeysOn(*cluster_, cluster_->Primaries()[0], 1, "wait")[0];
  BucketOp op{key, NoRefill(100), 1, ReplicaWait{1, 1000}};
  auto replies = ApplyBlocking(*store, {op});
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  EXPECT_TRUE(replies->front().allowed);
  EXPECT_EQ(replies->front().remaining, 99);
  // The replica has the write once the check is answered.
  const uint16_t primary = cluster_->PrimaryOf(KeySlot(key));
  for (uint16_t port : cluster_->ports()) {
    if (port == primary) continue;
    RedisClient replica(port);
    replica.Command({"READONLY"});
    ReplyPtr exists = replica.Command({"EXISTS", key});
    if (exists->type == REDIS_REPLY_INTEGER && exists->integer == 1) return;  // found it
  }
  ADD_FAILURE() << "no replica holds " << key << " after WAIT";
}

// Moves the slots of `keys` from primary `from` to primary `to` by hand, a key at a time, while
// four threads check those keys: checks meet ASK while a slot is half moved (and, for keys
// sharing a slot, calls of several checks meet TRYAGAIN or ASK about one another's keys), and
// MOVED after. No check may fail, and every bucket must hold exactly what was taken from it.
// Returns the store's counts of redirections and retries.
ClusterStoreStats ReshardUnderLoad(RedisCluster& cluster, const std::vector<std::string>& keys,
                                   uint16_t from, uint16_t to) {
  const Limit limit = NoRefill(1'000'000);
  auto store = Connect(cluster.Options());
  std::map<std::string, std::atomic<int>> charged;
  for (const auto& k : keys) charged[k] = 0;
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0};
  std::atomic<int> checks{0};
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; !stop; ++i, ++checks) {
        const std::string& key = keys[i % keys.size()];
        auto replies = ApplyBlocking(*store, {{key, limit, 1}});
        if (!replies.ok()) {
          ++errors;
          std::cerr << "check failed during resharding: " << replies.status().ToString() << "\n";
        } else if (replies->front().allowed) {
          ++charged[key];
        }
      }
    });
  }
  // Each step of the move is met by the load before the next.
  auto let_load_meet_it = [&] {
    const int seen = checks;
    EXPECT_TRUE(WaitUntil([&] { return checks >= seen + 8; }));
  };
  let_load_meet_it();
  const std::string from_id = cluster.NodeId(from);
  const std::string to_id = cluster.NodeId(to);
  RedisClient source(from);
  RedisClient target(to);
  std::map<uint16_t, std::vector<std::string>> by_slot;
  for (const std::string& key : keys) by_slot[KeySlot(key)].push_back(key);
  for (const auto& [slot_number, slot_keys] : by_slot) {
    const std::string slot = std::to_string(slot_number);
    target.Command({"CLUSTER", "SETSLOT", slot, "IMPORTING", from_id});
    source.Command({"CLUSTER", "SETSLOT", slot, "MIGRATING", to_id});
    for (const std::string& key : slot_keys) {
      let_load_meet_it();
      ReplyPtr moved = source.Command(
          {"MIGRATE", "127.0.0.1", std::to_string(to), "", "0", "5000", "KEYS", key});
      EXPECT_NE(moved->type, REDIS_REPLY_ERROR) << moved->str;
    }
    let_load_meet_it();  // every key is on the target: ASK
    target.Command({"CLUSTER", "SETSLOT", slot, "NODE", to_id});
    source.Command({"CLUSTER", "SETSLOT", slot, "NODE", to_id});
    for (uint16_t other : cluster.Primaries()) {
      if (other != from && other != to) {
        RedisClient(other).Command({"CLUSTER", "SETSLOT", slot, "NODE", to_id});
      }
    }
    let_load_meet_it();
  }
  let_load_meet_it();
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors, 0);
  const ClusterStoreStats stats = store->Stats();
  EXPECT_GT(stats.moved, 0u);
  std::cout << "resharding: " << stats.moved << " MOVED and " << stats.asked
            << " ASK redirections followed, " << stats.retries << " retries\n";
  for (const std::string& key : keys) {
    // The primaries were told at once; a replica, which PrimaryOf may ask, learns by gossip.
    EXPECT_TRUE(WaitUntil([&] { return cluster.PrimaryOf(KeySlot(key)) == to; })) << key;
    EXPECT_GT(charged[key], 0) << key;
    // Every take is still in the bucket: none was lost in the move, none counted twice.
    EXPECT_EQ(Remaining(*store, key, limit), limit.capacity - charged[key]) << key;
  }
  return stats;
}

TEST_F(ClusterStoreTest, ReshardingUnderLoadFailsNoCheckAndKeepsEveryCount) {
  const std::vector<uint16_t> primaries = cluster_->Primaries();
  ReshardUnderLoad(*cluster_, KeysOn(*cluster_, primaries[0], 6, "move"), primaries[0],
                   primaries[1]);
}

// Six keys in one slot (one hash tag), moved one at a time: concurrent checks on them share
// script calls, which the half-moved slot answers for all their keys together (TRYAGAIN when some
// are moved and some not). Such a call is split at once into a call per check, each answered for
// its own key, so no check waits out a retry.
TEST_F(ClusterStoreTest, ReshardingASlotWhoseKeysShareCallsFailsNoCheck) {
  const std::vector<uint16_t> primaries = cluster_->Primaries();
  std::string tag;
  for (int i = 0; tag.empty(); ++i) {
    const std::string candidate = "{tag" + std::to_string(i) + "}";
    if (cluster_->PrimaryOf(KeySlot(candidate)) == primaries[1]) tag = candidate;
  }
  std::vector<std::string> keys;
  keys.reserve(6);
  for (int i = 0; i < 6; ++i) keys.push_back("rl:" + tag + ":" + std::to_string(i));
  EXPECT_EQ(ReshardUnderLoad(*cluster_, keys, primaries[1], primaries[2]).retries, 0u);
}

// Whether the node at `observer` holds the node `id` failed (flag "fail", not the suspicion
// "fail?").
bool MarkedFailed(const RedisCluster& cluster, uint16_t observer, const std::string& id) {
  std::istringstream nodes(cluster.Client(observer)->String({"CLUSTER", "NODES"}));
  for (std::string line; std::getline(nodes, line);) {
    if (!line.starts_with(id)) continue;
    std::istringstream fields(line);
    std::string skip;
    std::string flags;
    fields >> skip >> skip >> flags;
    return ("," + flags + ",").find(",fail,") != std::string::npos;
  }
  return false;
}

// Last in the suite: it leaves one shard without nodes.
TEST_F(ClusterStoreTest, AFailoverIsAGapThenAShardDownStaysLocal) {
  const std::vector<uint16_t> primaries = cluster_->Primaries();
  const uint16_t victim = primaries[2];
  const std::vector<std::string> victim_keys = KeysOn(*cluster_, victim, 3, "victim");
  const std::vector<std::string> other_keys = KeysOn(*cluster_, primaries[0], 3, "safe");
  const Limit limit = NoRefill(1'000'000);
  auto store = Connect(cluster_->Options());
  std::atomic<bool> stop{false};
  std::atomic<int> victim_allowed{0};
  std::atomic<int> other_errors{0};
  std::atomic<int64_t> last_victim_error_ms{0};
  std::atomic<int64_t> first_victim_error_ms{0};
  std::atomic<int> rounds{0};
  const auto start = RealClock::now();
  auto since_start = [&] {
    return std::chrono::duration_cast<milliseconds>(RealClock::now() - start).count();
  };
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; !stop; ++i) {
        auto v = ApplyBlocking(*store, {{victim_keys[i % 3], limit, 1}});
        if (v.ok()) {
          if (v->front().allowed) ++victim_allowed;
        } else {
          int64_t zero = 0;
          first_victim_error_ms.compare_exchange_strong(zero, since_start());
          last_victim_error_ms = since_start();
        }
        if (!ApplyBlocking(*store, {{other_keys[i % 3], limit, 1}}).ok()) ++other_errors;
        ++rounds;
      }
    });
  }
  auto let_load_run = [&] {
    const int seen = rounds;
    EXPECT_TRUE(WaitUntil([&] { return rounds >= seen + 20; }));
  };
  let_load_run();
  const int64_t killed_ms = since_start();
  cluster_->Kill(victim);
  // The replica takes over after the node timeout (1 s) and an election; checks resume alone.
  const bool resumed = WaitUntil(
      [&] { return first_victim_error_ms > 0 && since_start() - last_victim_error_ms > 500; },
      milliseconds(15'000));
  EXPECT_TRUE(resumed) << "checks on the failed shard did not resume";
  const int64_t gap = last_victim_error_ms - killed_ms;
  int64_t charged_before = 0;
  for (const auto& k : victim_keys) charged_before += limit.capacity - Remaining(*store, k, limit);
  std::cout << "failover: checks on the failed shard failed (failure policy) for " << gap
            << " ms after the kill; " << victim_allowed - charged_before
            << " admitted checks forgotten by the promoted replica\n";
  EXPECT_EQ(other_errors, 0) << "other shards must not notice a failover";

  // Now kill the promoted replica too: that shard has no node left.
  const uint16_t promoted = cluster_->PrimaryOf(KeySlot(victim_keys[0]));
  ASSERT_NE(promoted, victim);
  ASSERT_NE(promoted, 0);
  const std::string promoted_id = cluster_->NodeId(promoted);
  cluster_->Kill(promoted);
  EXPECT_TRUE(WaitUntil([&] { return MarkedFailed(*cluster_, primaries[0], promoted_id); }))
      << "the other nodes never marked the shard's last node failed";
  const int other_errors_before = other_errors;
  const auto probe_start = RealClock::now();
  auto down = ApplyBlocking(*store, {{victim_keys[0], limit, 1}});
  EXPECT_FALSE(down.ok());
  EXPECT_LT(RealClock::now() - probe_start, milliseconds(1000)) << "a down shard must fail fast";
  let_load_run();
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(other_errors, other_errors_before) << "a shard down must not stop the others";
  EXPECT_TRUE(ApplyBlocking(*store, {{other_keys[0], limit, 1}}).ok());
}

}  // namespace
}  // namespace sluice
