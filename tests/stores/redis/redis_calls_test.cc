// The Redis store's script calls against real redis-server processes: checks sharing socket
// writes and calls, several checks in one call, bucket layouts, replica waits, memory, and a
// server's hostile replies.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <cmath>
#include <future>
#include <iostream>
#include <memory>
#include <thread>

#include "sluice/limiter.h"
#include "sluice/redis_store.h"
#include "stores/redis/redis_store_testing.h"
#include "support/apply_blocking.h"
#include "support/redis_server.h"
#include "support/wait_until.h"

// In sluice::testing, beside the Redis helpers these tests share (redis_store_testing.h).
namespace sluice::testing {
namespace {

using std::chrono::milliseconds;

// --- Pipelining ---------------------------------------------------------------------------

TEST(RedisPipelineTest, ConcurrentChecksShareSocketWrites) {
  RedisServer server;
  auto store = Connect(server.Options());
  auto limiter = Limiter::Create({{"a", "ip", "", kHundredPerHour, 1},
                                  {"b", "key", "", kHundredPerHour, 1},
                                  {"c", "tenant", "", kHundredPerHour, 1}},
                                 {}, store);
  ASSERT_TRUE(limiter.ok());
  const RedisStoreStats before = store->Stats();
  std::atomic<int> done{0};
  constexpr int kChecks = 2000;
  for (int i = 0; i < kChecks; ++i) {
    (*limiter)->Check({{"ip", std::to_string(i)}, {"key", "k"}, {"tenant", "t"}},
                      [&](const Decision& d) {
                        EXPECT_TRUE(d.checked);
                        done.fetch_add(1);
                      });
  }
  ASSERT_TRUE(testing::WaitUntil([&] { return done.load() == kChecks; }));
  const RedisStoreStats after = store->Stats();
  // Checks that arrive together are one script call, and calls share writes.
  EXPECT_LT(after.commands - before.commands, kChecks / 4u);
  EXPECT_LE(after.writes - before.writes, after.commands - before.commands);
}

TEST(RedisPipelineTest, ChecksThatWaitForAnAnswerGoInTheNextCallTogether) {
  RedisServer server;
  RedisOptions options = server.Options();
  options.timeout = std::chrono::seconds(5);
  auto store = Connect(options);
  auto limiter = MakeLimiter(store, kHundredPerHour);
  ASSERT_TRUE(limiter->CheckBlocking({{"key", "warm"}}).checked);  // the script is loaded
  const RedisStoreStats before = store->Stats();
  server.Pause();  // calls written now stay unanswered
  std::atomic<int> checked{0};
  std::atomic<int> done{0};
  constexpr int kChecks = 40;
  for (int i = 0; i < kChecks; ++i) {
    limiter->Check({{"key", std::to_string(i)}}, [&](const Decision& d) {
      checked.fetch_add(d.checked ? 1 : 0);
      done.fetch_add(1);
    });
    // Each check on its own (a call each, were they sent): the pipeline takes a check on its own
    // thread, and nothing it shows says when it has.
    std::this_thread::sleep_for(milliseconds(2));
  }
  server.Resume();
  ASSERT_TRUE(testing::WaitUntil([&] { return done.load() == kChecks; }));
  EXPECT_EQ(checked.load(), kChecks);
  // Two calls went before the server answered; every later check waited for the next call.
  EXPECT_LE(store->Stats().commands - before.commands, 3u);
}

// --- Several checks in one script call ------------------------------------------------------

// A call of three checks, each one op, in the layout the store writes: keys, four numbers an op,
// the checks' codes apart by spaces.
std::vector<std::string> CallOfChecks(const std::string& sha, const std::vector<std::string>& keys,
                                      const Limit& limit, const std::string& codes) {
  std::vector<std::string> command = {"EVALSHA", sha, std::to_string(keys.size())};
  command.insert(command.end(), keys.begin(), keys.end());
  for (size_t i = 0; i < keys.size(); ++i) {
    for (int64_t n : {limit.capacity, limit.tokens, limit.period_ms, int64_t{1}}) {
      command.push_back(std::to_string(n));
    }
  }
  command.push_back(codes);
  return command;
}

// A script under test: an algorithm, and for the token bucket a layout.
struct BucketScriptKind {
  Algorithm algorithm;
  BucketLayout layout = BucketLayout::kHash;
};

std::string ScriptName(const ::testing::TestParamInfo<BucketScriptKind>& info) {
  static constexpr const char* kNames[] = {"TokenBucket", "Gcra", "FixedWindow"};
  return std::string(kNames[static_cast<size_t>(info.param.algorithm)]) +
         (info.param.layout == BucketLayout::kCompact ? "Compact" : "");
}

class RedisCallOfChecksTest : public ::testing::TestWithParam<BucketScriptKind> {
 protected:
  std::string_view Script() const { return BucketScript(GetParam().algorithm, GetParam().layout); }
};

// Checks on one bucket in one call are decided in turn, as separate calls would be, and the
// bucket is left as separate calls leave it.
TEST_P(RedisCallOfChecksTest, ChecksOnOneBucketAreDecidedInTurn) {
  RedisServer server;
  auto client = server.Client();
  const std::string sha = client->String({"SCRIPT", "LOAD", std::string(Script())});
  const Limit two_per_hour{2, 2, 3'600'000};
  testing::ReplyPtr together =
      client->Command(CallOfChecks(sha, {"one", "one", "other", "one"}, two_per_hour, "0 0 0 0"));
  ASSERT_EQ(together->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(together->elements, 16u);
  const std::vector<std::pair<long long, long long>> expected = {{1, 1}, {1, 0}, {1, 1}, {0, 0}};
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("op " + std::to_string(i));
    EXPECT_EQ(together->element[4 * i]->integer, expected[i].first);       // allowed
    EXPECT_EQ(together->element[4 * i + 1]->integer, expected[i].second);  // left
  }
  EXPECT_GT(together->element[14]->integer, 0);  // the rejected one's retry_ms
  // What the call stored is what separate calls store: the next check finds both spent.
  for (int i = 0; i < 3; ++i) client->Command(CallOfChecks(sha, {"alone"}, two_per_hour, "0"));
  for (const std::string key : {"one", "alone"}) {
    SCOPED_TRACE(key);
    testing::ReplyPtr next = client->Command(CallOfChecks(sha, {key}, two_per_hour, "0"));
    EXPECT_EQ(next->element[0]->integer, 0);
    EXPECT_EQ(next->element[1]->integer, 0);
    EXPECT_GT(client->Integer({"PTTL", key}), 0);
  }
}

// An all-or-nothing check that one bucket rejects charges none of its buckets, and the checks
// after it in the call see them untouched.
TEST_P(RedisCallOfChecksTest, ARejectedAllOrNothingCheckLeavesItsBucketsToTheNext) {
  RedisServer server;
  auto client = server.Client();
  const std::string sha = client->String({"SCRIPT", "LOAD", std::string(Script())});
  const Limit one_per_hour{1, 1, 3'600'000};
  client->Command(CallOfChecks(sha, {"spent"}, one_per_hour, "0"));
  testing::ReplyPtr reply = client->Command(
      CallOfChecks(sha, {"spent", "spent", "free", "free"}, one_per_hour, "0 11 0"));
  ASSERT_EQ(reply->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(reply->elements, 16u);
  EXPECT_EQ(reply->element[0]->integer, 0);   // spent
  EXPECT_EQ(reply->element[4]->integer, 0);   // the all-or-nothing check: spent rejects ...
  EXPECT_EQ(reply->element[8]->integer, 1);   // ... free would allow ...
  EXPECT_EQ(reply->element[9]->integer, 1);   // ... and keeps its token ...
  EXPECT_EQ(reply->element[12]->integer, 1);  // ... for the check after it
  EXPECT_EQ(reply->element[13]->integer, 0);
}

// A key holding something else fails only the checks that name it.
TEST_P(RedisCallOfChecksTest, ABucketOfTheWrongTypeFailsOnlyItsCheck) {
  RedisServer server;
  auto client = server.Client();
  const std::string sha = client->String({"SCRIPT", "LOAD", std::string(Script())});
  client->Command({"RPUSH", "list", "x"});
  testing::ReplyPtr reply =
      client->Command(CallOfChecks(sha, {"fine", "list", "fine"}, kHundredPerHour, "0 0 0"));
  ASSERT_EQ(reply->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(reply->elements, 12u);
  EXPECT_EQ(reply->element[0]->integer, 1);
  for (size_t i = 4; i < 8; ++i) {
    ASSERT_EQ(reply->element[i]->type, REDIS_REPLY_ERROR);
    EXPECT_TRUE(std::string(reply->element[i]->str).starts_with("WRONGTYPE"));
  }
  EXPECT_EQ(reply->element[8]->integer, 1);
  EXPECT_EQ(reply->element[9]->integer, 98);
  EXPECT_EQ(client->Command({"LLEN", "list"})->integer, 1);  // untouched
  // Codes that do not cover the keys are refused, and nothing is written.
  testing::ReplyPtr wrong = client->Command(CallOfChecks(sha, {"new"}, kHundredPerHour, "0 0"));
  EXPECT_EQ(wrong->type, REDIS_REPLY_ERROR);
  EXPECT_EQ(client->Integer({"EXISTS", "new"}), 0);
}

// A fixed window's counter holding something INCRBY cannot add to fails its checks at the read,
// before anything is written, not the call's other checks at the write.
TEST(RedisCallOfChecksFixedWindowTest, ACounterThatIsNoWholeNumberFailsOnlyItsCheck) {
  RedisServer server;
  auto client = server.Client();
  const std::string sha =
      client->String({"SCRIPT", "LOAD", std::string(BucketScript(Algorithm::kFixedWindow))});
  const Limit ten_per_hour{10, 10, 3'600'000};
  for (const std::string odd : {"2.5", "1e3", "x"}) {
    SCOPED_TRACE(odd);
    client->Command({"SET", "odd", odd});
    testing::ReplyPtr reply =
        client->Command(CallOfChecks(sha, {"fine", "odd", "fine"}, ten_per_hour, "0 0 0"));
    ASSERT_EQ(reply->type, REDIS_REPLY_ARRAY);
    ASSERT_EQ(reply->elements, 12u);
    EXPECT_EQ(reply->element[0]->integer, 1);
    ASSERT_EQ(reply->element[4]->type, REDIS_REPLY_ERROR);
    EXPECT_NE(std::string(reply->element[4]->str).find("holds no whole count"), std::string::npos);
    EXPECT_EQ(reply->element[8]->integer, 1);
    EXPECT_EQ(client->String({"GET", "odd"}), odd);  // untouched
  }
  EXPECT_EQ(client->String({"GET", "fine"}), "6");
}

INSTANTIATE_TEST_SUITE_P(Scripts, RedisCallOfChecksTest,
                         ::testing::Values(BucketScriptKind{Algorithm::kTokenBucket},
                                           BucketScriptKind{Algorithm::kTokenBucket,
                                                            BucketLayout::kCompact},
                                           BucketScriptKind{Algorithm::kGcra},
                                           BucketScriptKind{Algorithm::kFixedWindow}),
                         ScriptName);

// Switching a deployment's layout keeps every count: each layout reads the bucket the other left,
// and replaces it with its own.
TEST(RedisBucketLayoutTest, EachLayoutTakesOverTheOthersBuckets) {
  RedisServer server;
  auto client = server.Client();
  const std::string hash = client->String(
      {"SCRIPT", "LOAD", std::string(BucketScript(Algorithm::kTokenBucket, BucketLayout::kHash))});
  const std::string compact =
      client->String({"SCRIPT", "LOAD",
                      std::string(BucketScript(Algorithm::kTokenBucket, BucketLayout::kCompact))});
  const Limit ten_per_hour{10, 10, 3'600'000};
  auto take = [&](const std::string& sha, int64_t cost) {
    testing::ReplyPtr reply =
        client->Command({"EVALSHA", sha, "1", "switch", std::to_string(ten_per_hour.capacity),
                         std::to_string(ten_per_hour.tokens),
                         std::to_string(ten_per_hour.period_ms), std::to_string(cost)});
    EXPECT_EQ(reply->type, REDIS_REPLY_ARRAY);
    return reply->type == REDIS_REPLY_ARRAY ? reply->element[1]->integer : -1;
  };
  EXPECT_EQ(take(hash, 5), 5);
  EXPECT_EQ(client->String({"TYPE", "switch"}), "hash");
  EXPECT_EQ(take(compact, 1), 4);
  EXPECT_EQ(client->String({"TYPE", "switch"}), "string");
  EXPECT_EQ(client->Integer({"STRLEN", "switch"}), 16);
  EXPECT_GT(client->Integer({"PTTL", "switch"}), 0);
  EXPECT_EQ(take(hash, 1), 3);
  EXPECT_EQ(client->String({"TYPE", "switch"}), "hash");
  EXPECT_GT(client->Integer({"PTTL", "switch"}), 0);
  // A string that is no bucket is an error, not a full bucket.
  client->Command({"SET", "switch", "not a bucket"});
  testing::ReplyPtr refused =
      client->Command({"EVALSHA", compact, "1", "switch", "10", "10", "3600000", "1"});
  ASSERT_EQ(refused->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(refused->element[0]->type, REDIS_REPLY_ERROR);
  EXPECT_NE(std::string(refused->element[0]->str).find("holds no token bucket"), std::string::npos);
}

// Through the store: checks on a bucket of the wrong type fail with the server's error, and the
// checks that share their script calls are answered as usual.
TEST(RedisPipelineTest, AWrongTypeBucketFailsOnlyTheChecksThatNameIt) {
  RedisServer server;
  server.Client()->Command({"RPUSH", "list", "x"});
  auto store = Connect(server.Options());
  constexpr int kChecks = 400;
  std::atomic<int> done{0};
  std::atomic<int> good_allowed{0};
  std::atomic<int> bad_failed{0};
  for (int i = 0; i < kChecks; ++i) {
    const bool bad = i % 2 == 1;
    store->Apply({{bad ? "list" : "good:" + std::to_string(i % 10), kHundredPerHour, 1}},
                 [&, bad](Result<std::vector<BucketReply>> r) {
                   if (bad && !r.ok() && r.status().message().starts_with("WRONGTYPE")) {
                     bad_failed.fetch_add(1);
                   }
                   if (!bad && r.ok() && (*r)[0].allowed) good_allowed.fetch_add(1);
                   done.fetch_add(1);
                 });
  }
  ASSERT_TRUE(testing::WaitUntil([&] { return done.load() == kChecks; }));
  EXPECT_EQ(good_allowed.load(), kChecks / 2);
  EXPECT_EQ(bad_failed.load(), kChecks / 2);
  EXPECT_LT(store->Stats().commands, static_cast<uint64_t>(kChecks));  // they shared calls
}

// A server without replicas: every WAIT ends short at its timeout, the decisions stand, and the
// checks of one write share one WAIT instead of queueing one behind another.
TEST(RedisReplicaWaitTest, WaitsEndShortWithoutReplicasAndChecksShareThem) {
  RedisServer server;
  RedisOptions options = server.Options();
  options.timeout = milliseconds(10'000);  // a loaded machine may spread them over many writes
  auto store = Connect(options);
  constexpr int kChecks = 40;
  std::vector<std::future<Result<std::vector<BucketReply>>>> answers;
  for (int i = 0; i < kChecks; ++i) {
    auto promise = std::make_shared<std::promise<Result<std::vector<BucketReply>>>>();
    answers.push_back(promise->get_future());
    store->Apply({{"rl:key:w" + std::to_string(i), kHundredPerHour, 1, ReplicaWait{1, 20}}},
                 [promise](auto r) { promise->set_value(std::move(r)); });
  }
  for (auto& answer : answers) {
    Result<std::vector<BucketReply>> r = answer.get();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->front().allowed);
  }
  const RedisStoreStats stats = store->Stats();
  EXPECT_GE(stats.short_waits, 1u);
  EXPECT_LT(stats.short_waits, static_cast<uint64_t>(kChecks));  // one WAIT per write
}

// What a bucket costs Redis in memory: the token bucket's hash of two fields against GCRA's one
// number (the design (docs/design.md) gives 132 and 84 bytes).
TEST(RedisMemoryTest, AGcraBucketTakesLessMemoryThanATokenBucket) {
  RedisServer server;
  auto store = Connect(server.Options());
  const std::string key = "rl:key:ak_abc123";
  const std::string gcra_key = "rl:gcra:key:ak_abc123";
  ASSERT_TRUE(ApplyBlocking(*store, {{key, kHundredPerMinute, 1}}).ok());
  ASSERT_TRUE(ApplyBlocking(*store, {{gcra_key, kHundredPerMinute, 1, {}, Algorithm::kGcra}}).ok());
  auto client = server.Client();
  const long long token_bucket = client->Integer({"MEMORY", "USAGE", key});
  const long long gcra = client->Integer({"MEMORY", "USAGE", gcra_key});
  std::cout << "MEMORY USAGE: token bucket " << token_bucket << " bytes, GCRA " << gcra
            << " bytes\n";
  EXPECT_LT(gcra, token_bucket);
}

// --- Bad input ----------------------------------------------------------------------------

TEST(RedisBadInputTest, HostileValuesBecomeSafeDistinctKeys) {
  RedisServer server;
  auto limiter = MakeLimiter(Connect(server.Options()), kHundredPerHour);
  const std::vector<std::string> values = {"",    "a b", "line\r\nFLUSHALL", "x:y", "{tag}",
                                           "%41", "A"};
  for (const std::string& v : values) {
    Decision d = limiter->CheckBlocking({{"key", v}});
    EXPECT_TRUE(d.checked && d.allowed) << d.error.ToString();
    EXPECT_EQ(d.verdicts.at(0).remaining, 99) << "value \"" << v << "\" shared a bucket";
  }
  EXPECT_EQ(server.Client()->Integer({"DBSIZE"}), static_cast<long long>(values.size()));
  Decision big = limiter->CheckBlocking({{"key", std::string(size_t{10} * 1024, 'x')}});
  EXPECT_FALSE(big.allowed);
  EXPECT_EQ(big.error.code(), StatusCode::kInvalidArgument);
}

// Stands where a Redis server should be (a hostile one, or a man in the middle on plain TCP)
// and answers whatever it is sent with `answer`, keeping each connection open afterwards.
class HostileServer {
 public:
  explicit HostileServer(std::string answer)
      : answer_(std::move(answer)),
        acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    Accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~HostileServer() {
    io_.stop();
    thread_.join();
  }
  HostileServer(const HostileServer&) = delete;
  HostileServer& operator=(const HostileServer&) = delete;

  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  int connections() const { return connections_.load(); }

 private:
  using Socket = boost::asio::ip::tcp::socket;

  void Accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, Socket socket) {
      if (ec) return;
      ++connections_;
      auto peer = std::make_shared<Socket>(std::move(socket));
      peer->async_read_some(boost::asio::buffer(scratch_), [this, peer](auto ec, size_t) {
        if (!ec)
          boost::asio::async_write(*peer, boost::asio::buffer(answer_), [peer](auto, size_t) {});
      });
      Accept();
    });
  }

  const std::string answer_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::array<char, 4096> scratch_{};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

// The fuzzer's find: a reply whose header declares 555,555,554 elements, which hiredis 0.14
// would calloc (4.4 GB) before any element came. The header is refused as a protocol error
// before hiredis reads it: the connection is dropped and checks get the failure policy, on time.
TEST(RedisBadInputTest, AReplyDeclaringGigabytesDropsTheConnection) {
  HostileServer server("*555555554\r\n");
  RedisOptions options;
  options.port = server.port();
  options.timeout = milliseconds(200);
  options.reconnect_min = milliseconds(10);
  auto limiter =
      MakeLimiter(std::make_shared<RedisStore>(options), kHundredPerHour, FailurePolicy::kClosed);
  Decision d;
  for (int i = 0; i < 20 && d.error.message().find("555555554") == std::string::npos; ++i) {
    const auto start = std::chrono::steady_clock::now();
    d = limiter->CheckBlocking({{"key", "k"}});
    EXPECT_LT(std::chrono::steady_clock::now() - start, options.timeout + milliseconds(100));
    EXPECT_FALSE(d.checked);
    EXPECT_FALSE(d.allowed);
  }
  EXPECT_NE(d.error.message().find("protocol error: an array of 555555554 elements"),
            std::string::npos)
      << d.error.ToString();
  EXPECT_GE(server.connections(), 1);
}

}  // namespace
}  // namespace sluice::testing
