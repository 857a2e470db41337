// The memory store's arithmetic (TakeTokens) against the Lua script run by a real Redis, on the
// same random schedules. Two calls are swapped in the script under test: TIME comes from two
// extra arguments, so that both sides see the same milliseconds, and the expiry is recorded in
// the hash instead of set, so that the real clock cannot expire a bucket mid-test.
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>

#include "sluice/redis_store.h"
#include "sluice/token_bucket.h"
#include "support/redis_server.h"

namespace sluice {
namespace {

void Swap(std::string& script, const std::string& from, const std::string& to) {
  const size_t at = script.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  script.replace(at, from.size(), to);
}

std::string ScriptWithClockFromArgs() {
  std::string script(TokenBucketScript());
  Swap(script, "redis.call('TIME')", "{ARGV[#ARGV - 1], ARGV[#ARGV]}");
  Swap(script, "redis.call('PEXPIRE', key,", "redis.call('HSET', key, 'ttl',");
  return script;
}

TEST(ScriptParityTest, MemoryArithmeticMatchesTheScriptOnRandomSchedules) {
  testing::RedisServer server;
  auto client = server.Client();
  const std::string sha = client->String({"SCRIPT", "LOAD", ScriptWithClockFromArgs()});
  std::mt19937_64 rng(20261202);
  // Every call takes all five buckets at once, as a request with five rules would.
  const std::vector<Limit> limits = {
      {100, 100, 60'000}, {1, 1, 3}, {7, 3, 1'000}, {10, 1, 86'400'000}, {1'000'000, 999'999, 1}};
  std::vector<std::optional<BucketState>> states(limits.size());
  int64_t now_ms = 1'764'633'600'000;  // a real epoch time, as TIME gives
  for (int step = 0; step < 400; ++step) {
    now_ms += std::uniform_int_distribution<int64_t>(0, 700)(rng);
    std::vector<std::string> command = {"EVALSHA", sha, std::to_string(limits.size())};
    for (size_t i = 0; i < limits.size(); ++i) command.push_back("parity:" + std::to_string(i));
    std::vector<TakeOutcome> expected;
    for (size_t i = 0; i < limits.size(); ++i) {
      const Limit& limit = limits[i];
      const int64_t cost =
          std::uniform_int_distribution<int64_t>(-1, std::min<int64_t>(limit.capacity, 3))(rng);
      expected.push_back(TakeTokens(states[i], limit, cost, now_ms));
      for (int64_t n : {limit.capacity, limit.tokens, limit.period_ms, cost}) {
        command.push_back(std::to_string(n));
      }
    }
    command.push_back(std::to_string(now_ms / 1000));
    command.push_back(std::to_string(now_ms % 1000 * 1000));
    testing::ReplyPtr reply = client->Command(command);
    ASSERT_EQ(reply->type, REDIS_REPLY_ARRAY) << (reply->str ? reply->str : "");
    ASSERT_EQ(reply->elements, 3 * limits.size());
    for (size_t i = 0; i < limits.size(); ++i) {
      SCOPED_TRACE("step " + std::to_string(step) + ", bucket " + std::to_string(i));
      const std::string key = "parity:" + std::to_string(i);
      BucketReply got{reply->element[3 * i]->integer == 1, reply->element[3 * i + 1]->integer,
                      reply->element[3 * i + 2]->integer};
      ASSERT_EQ(got, expected[i].reply);
      ASSERT_EQ(std::stod(client->String({"HGET", key, "tokens"})), expected[i].state.tokens);
      ASSERT_EQ(std::stod(client->String({"HGET", key, "ttl"})),
                static_cast<double>(expected[i].ttl_ms));
      if (expected[i].ttl_ms <= 0) {  // PEXPIRE 0 deletes the key: a full bucket is no bucket
        client->Command({"DEL", key});
        states[i].reset();
      } else {
        states[i] = expected[i].state;
      }
    }
  }
}

}  // namespace
}  // namespace sluice
