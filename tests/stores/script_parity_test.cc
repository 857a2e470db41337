// The memory store's arithmetic (TakeTokens) against the Lua script run by a real Redis, on the
// same random schedules. Two calls are swapped in the script under test: TIME comes from two
// extra arguments, so that both sides see the same milliseconds, and the expiry is recorded in
// the hash instead of set, so that the real clock cannot expire a bucket mid-test.
#include <gtest/gtest.h>

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
  Swap(script, "redis.call('TIME')", "{ARGV[5], ARGV[6]}");
  Swap(script, "redis.call('PEXPIRE', key,", "redis.call('HSET', key, 'ttl',");
  return script;
}

TEST(ScriptParityTest, MemoryArithmeticMatchesTheScriptOnRandomSchedules) {
  testing::RedisServer server;
  auto client = server.Client();
  const std::string sha = client->String({"SCRIPT", "LOAD", ScriptWithClockFromArgs()});
  std::mt19937_64 rng(20261202);
  const Limit limits[] = {
      {100, 100, 60'000}, {1, 1, 3}, {7, 3, 1'000}, {10, 1, 86'400'000}, {1'000'000, 999'999, 1}};
  int key = 0;
  for (const Limit& limit : limits) {
    const std::string bucket = "parity:" + std::to_string(key++);
    std::optional<BucketState> state;
    int64_t now_ms = 1'764'633'600'000;  // a real epoch time, as TIME gives
    for (int step = 0; step < 300; ++step) {
      now_ms +=
          std::uniform_int_distribution<int64_t>(0, 3 * limit.period_ms / limit.tokens + 2)(rng);
      int64_t cost =
          std::uniform_int_distribution<int64_t>(-1, std::min<int64_t>(limit.capacity, 3))(rng);
      TakeOutcome expected = TakeTokens(state, limit, cost, now_ms);
      testing::ReplyPtr reply = client->Command(
          {"EVALSHA", sha, "1", bucket, std::to_string(limit.capacity),
           std::to_string(limit.tokens), std::to_string(limit.period_ms), std::to_string(cost),
           std::to_string(now_ms / 1000), std::to_string(now_ms % 1000 * 1000)});
      ASSERT_EQ(reply->type, REDIS_REPLY_ARRAY) << (reply->str ? reply->str : "");
      BucketReply got{reply->element[0]->integer == 1, reply->element[1]->integer,
                      reply->element[2]->integer};
      ASSERT_EQ(got, expected.reply) << "limit " << limit.capacity << "/" << limit.tokens << "/"
                                     << limit.period_ms << " step " << step;
      ASSERT_EQ(std::stod(client->String({"HGET", bucket, "tokens"})), expected.state.tokens)
          << "step " << step;
      ASSERT_EQ(std::stod(client->String({"HGET", bucket, "ttl"})),
                static_cast<double>(expected.ttl_ms))
          << "step " << step;
      if (expected.ttl_ms <= 0) {  // PEXPIRE 0 deletes the key: a full bucket is no bucket
        client->Command({"DEL", bucket});
        state.reset();
      } else {
        state = expected.state;
      }
    }
  }
}

}  // namespace
}  // namespace sluice
