// The memory store's arithmetic (TakeTokens, TakeGcra, TakeFixedWindow) against the Lua scripts run
// by a real Redis, on the same random schedules. Two calls are swapped in each script under test:
// TIME comes from two extra arguments, so that both sides see the same milliseconds, and the expiry
// is recorded instead of set, so that the real clock cannot expire a bucket mid-test. The
// all-or-nothing argument is left out: the store conformance tests cover that mode.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <random>
#include <string>

#include "sluice/fixed_window.h"
#include "sluice/gcra.h"
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

// Runs `script` (its TIME already swapped for the last two arguments) and `take`, the C++
// mirror, on the same 400 random steps over five buckets, every call taking all five at once as
// a request with five rules would; the replies must be equal, and `stored` compares what the
// script kept under each key with the mirror's outcome. Returns the mirror's bucket states.
using Take = std::function<TakeOutcome(testing::RedisClient& client, size_t bucket,
                                       const Limit& limit, int64_t cost, int64_t now_ms)>;
using Stored = std::function<void(testing::RedisClient& client, size_t bucket,
                                  const std::string& key, const TakeOutcome& expected)>;

void RunRandomSchedule(const std::string& script, const std::string& key_prefix, uint64_t seed,
                       const Take& take, const Stored& stored) {
  testing::RedisServer server;
  auto client = server.Client();
  const std::string sha = client->String({"SCRIPT", "LOAD", script});
  std::mt19937_64 rng(seed);
  const std::vector<Limit> limits = {
      {100, 100, 60'000}, {1, 1, 3}, {7, 3, 1'000}, {10, 1, 86'400'000}, {10'000, 1'000, 1'000}};
  int64_t now_ms = 1'764'633'600'000;  // a real epoch time, as TIME gives
  for (int step = 0; step < 400; ++step) {
    now_ms += std::uniform_int_distribution<int64_t>(0, 700)(rng);
    std::vector<std::string> command = {"EVALSHA", sha, std::to_string(limits.size())};
    for (size_t i = 0; i < limits.size(); ++i) command.push_back(key_prefix + std::to_string(i));
    std::vector<TakeOutcome> expected;
    for (size_t i = 0; i < limits.size(); ++i) {
      const Limit& limit = limits[i];
      const int64_t cost =
          std::uniform_int_distribution<int64_t>(-1, std::min<int64_t>(limit.capacity, 3))(rng);
      expected.push_back(take(*client, i, limit, cost, now_ms));
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
      BucketReply got{reply->element[3 * i]->integer == 1, reply->element[3 * i + 1]->integer,
                      reply->element[3 * i + 2]->integer};
      ASSERT_EQ(got, expected[i].reply);
      stored(*client, i, key_prefix + std::to_string(i), expected[i]);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// The script under test reading the clock from its last two arguments.
std::string WithClockFromArguments(std::string_view text) {
  std::string script(text);
  Swap(script, "redis.call('TIME')", "{ARGV[#ARGV - 1], ARGV[#ARGV]}");
  Swap(script, "local flags = ARGV[4 * #KEYS + 1] or ''", "local flags = ''");
  return script;
}

// The token bucket: the expiry is recorded in the hash instead of set, so that the real clock
// cannot expire a bucket mid-test.
TEST(ScriptParityTest, MemoryArithmeticMatchesTheScriptOnRandomSchedules) {
  std::string script = WithClockFromArguments(TokenBucketScript());
  Swap(script, "redis.call('PEXPIRE', key,", "redis.call('HSET', key, 'ttl',");
  std::vector<std::optional<BucketState>> states(5);
  RunRandomSchedule(
      script, "parity:", 20261202,
      [&](testing::RedisClient&, size_t i, const Limit& limit, int64_t cost, int64_t now_ms) {
        return TakeTokens(states[i], limit, cost, now_ms);
      },
      [&](testing::RedisClient& client, size_t i, const std::string& key,
          const TakeOutcome& expected) {
        ASSERT_EQ(std::stod(client.String({"HGET", key, "tokens"})), expected.state.tokens);
        ASSERT_EQ(std::stod(client.String({"HGET", key, "ttl"})),
                  static_cast<double>(expected.ttl_ms));
        if (expected.ttl_ms <= 0) {  // PEXPIRE 0 deletes the key: a full bucket is no bucket
          client.Command({"DEL", key});
          states[i].reset();
        } else {
          states[i] = expected.state;
        }
      });
}

// GCRA: the key's expiry is recorded beside it instead of set.
TEST(ScriptParityTest, GcraArithmeticMatchesItsScriptOnRandomSchedules) {
  std::string script = WithClockFromArguments(GcraScript());
  Swap(script, "redis.call('SET', key, tat, 'PX', ttl)",
       "redis.call('SET', key, tat); redis.call('SET', key .. ':ttl', ttl)");
  std::vector<std::optional<double>> tats(5);
  RunRandomSchedule(
      script, "gcra:", 20261203,
      [&](testing::RedisClient&, size_t i, const Limit& limit, int64_t cost, int64_t now_ms) {
        return TakeGcra(tats[i], limit, cost, now_ms);
      },
      [&](testing::RedisClient& client, size_t i, const std::string& key,
          const TakeOutcome& expected) {
        if (expected.ttl_ms <= 0) {  // full: the script deleted the key
          ASSERT_EQ(client.Integer({"EXISTS", key}), 0);
          tats[i].reset();
          return;
        }
        ASSERT_EQ(std::stod(client.String({"GET", key})), expected.state.tat_ms);
        ASSERT_EQ(std::stoll(client.String({"GET", key + ":ttl"})), expected.ttl_ms);
        tats[i] = expected.state.tat_ms;
      });
}

// The fixed window: a key's expiry (its window's end) is recorded beside it instead of set, and
// nothing expires: the script must itself count nothing from a key whose window has ended, as it
// does in the millisecond before Redis drops such a key.
TEST(ScriptParityTest, FixedWindowArithmeticMatchesItsScriptOnRandomSchedules) {
  std::string script = WithClockFromArguments(FixedWindowScript());
  Swap(script, "redis.call('PEXPIRETIME', key)",
       "tonumber(redis.call('GET', key .. ':end'))");
  Swap(script, "redis.call('SET', key, count, 'PXAT', window_end)",
       "redis.call('SET', key, count); redis.call('SET', key .. ':end', window_end)");
  struct Window {
    int64_t count = 0;
    int64_t end_ms = 0;
  };
  std::vector<std::optional<Window>> windows(5);
  RunRandomSchedule(
      script, "fw:", 20261204,
      [&](testing::RedisClient&, size_t i, const Limit& limit, int64_t cost, int64_t now_ms) {
        if (windows[i] && windows[i]->end_ms <= now_ms) windows[i].reset();  // its window ended
        return TakeFixedWindow(windows[i] ? std::optional(windows[i]->count) : std::nullopt, limit,
                               cost, now_ms);
      },
      [&](testing::RedisClient& client, size_t i, const std::string& key,
          const TakeOutcome& expected) {
        if (expected.ttl_ms <= 0) {                    // nothing counted in this window
          if (client.Integer({"EXISTS", key}) == 1) {  // an ended window's, or none at all
            ASSERT_LE(std::stoll(client.String({"GET", key + ":end"})), expected.state.updated_ms);
          }
          windows[i].reset();
          return;
        }
        ASSERT_EQ(std::stoll(client.String({"GET", key})),
                  static_cast<int64_t>(expected.state.tokens));
        const int64_t end_ms = expected.state.updated_ms + expected.ttl_ms;
        ASSERT_EQ(std::stoll(client.String({"GET", key + ":end"})), end_ms);
        windows[i] = Window{static_cast<int64_t>(expected.state.tokens), end_ms};
      });
}

}  // namespace
}  // namespace sluice
