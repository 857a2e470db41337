// The memory store's arithmetic (TakeTokens, TakeGcra, TakeFixedWindow) against the Lua scripts run
// by a real Redis, on the same random schedules. Two calls are swapped in each script under test:
// TIME comes from two extra arguments, so that both sides see the same milliseconds, and the expiry
// is recorded instead of set, so that the real clock cannot expire a bucket mid-test. Then one
// call of several checks against a call per check, on random calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "sluice/fixed_window.h"
#include "sluice/gcra.h"
#include "sluice/redis_store.h"
#include "sluice/token_bucket.h"
#include "support/redis_server.h"
#include "support/script_with_clock.h"

namespace sluice {
namespace {

// Runs `script` (its TIME already swapped for the last two arguments) and `take`, the C++
// mirror, on the same 400 random steps over five buckets, every call taking all five at once as
// a request with five rules would; the replies must be equal, and `stored` compares what the
// script kept under each key with the mirror's outcome. Returns the mirror's bucket states.
using TakeThroughRedis = std::function<TakeOutcome(
    testing::RedisClient& client, size_t bucket, const Limit& limit, int64_t cost, int64_t now_ms)>;
using Stored = std::function<void(testing::RedisClient& client, size_t bucket,
                                  const std::string& key, const TakeOutcome& expected)>;

void RunRandomSchedule(const std::string& script, const std::string& key_prefix, uint64_t seed,
                       const TakeThroughRedis& take, const Stored& stored, bool debt = false) {
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
      // Into debt, costs past the capacity too; else a refund, a look or a small take.
      const int64_t cost =
          debt ? std::uniform_int_distribution<int64_t>(0, 2 * limit.capacity + 1)(rng)
               : std::uniform_int_distribution<int64_t>(-1,
                                                        std::min<int64_t>(limit.capacity, 3))(rng);
      expected.push_back(take(*client, i, limit, cost, now_ms));
      for (int64_t n : {limit.capacity, limit.tokens, limit.period_ms, cost}) {
        command.push_back(std::to_string(n));
      }
    }
    if (debt) command.emplace_back(limits.size(), 'd');
    command.push_back(std::to_string(now_ms / 1000));
    command.push_back(std::to_string(now_ms % 1000 * 1000));
    testing::ReplyPtr reply = client->Command(command);
    ASSERT_EQ(reply->type, REDIS_REPLY_ARRAY) << (reply->str ? reply->str : "");
    ASSERT_EQ(reply->elements, 4 * limits.size());
    for (size_t i = 0; i < limits.size(); ++i) {
      SCOPED_TRACE("step " + std::to_string(step) + ", bucket " + std::to_string(i));
      const redisReply* const* op = reply->element + 4 * i;
      BucketReply got{.allowed = op[0]->integer == 1,
                      .remaining = op[1]->integer,
                      .retry_ms = op[2]->integer,
                      .reset_ms = op[3]->integer};
      ASSERT_EQ(got, expected[i].reply);
      stored(*client, i, key_prefix + std::to_string(i), expected[i]);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// The tokens a token bucket's key holds, in `layout`: the hash's field, or the first of the
// compact string's two little-endian doubles.
double StoredTokens(testing::RedisClient& client, const std::string& key, BucketLayout layout) {
  if (layout == BucketLayout::kHash) return std::stod(client.String({"HGET", key, "tokens"}));
  const std::string packed = client.String({"GET", key});
  double tokens = 0;
  EXPECT_EQ(packed.size(), 2 * sizeof tokens);
  if (packed.size() >= sizeof tokens) std::memcpy(&tokens, packed.data(), sizeof tokens);
  return tokens;
}

// The token bucket's script in `layout` against `take` (TakeTokens or TakeTokensInDebt): the
// replies, and the tokens and expiry each key holds.
void RunTokenBucketSchedule(const std::string& key_prefix, uint64_t seed,
                            decltype(&TakeTokens) take, bool debt,
                            BucketLayout layout = BucketLayout::kHash) {
  std::vector<std::optional<BucketState>> states(5);
  RunRandomSchedule(
      testing::ScriptWithClockFromArguments(Algorithm::kTokenBucket, layout), key_prefix, seed,
      [&](testing::RedisClient&, size_t i, const Limit& limit, int64_t cost, int64_t now_ms) {
        return take(states[i], limit, cost, now_ms);
      },
      [&](testing::RedisClient& client, size_t i, const std::string& key,
          const TakeOutcome& expected) {
        const std::string ttl = layout == BucketLayout::kHash
                                    ? client.String({"HGET", key, "ttl"})
                                    : client.String({"GET", key + ":ttl"});
        ASSERT_EQ(StoredTokens(client, key, layout), expected.state.tokens);
        ASSERT_EQ(std::stod(ttl), static_cast<double>(expected.ttl_ms));
        if (expected.ttl_ms <= 0) {  // PEXPIRE 0 deletes the key: a full bucket is no bucket
          client.Command({"DEL", key});
          states[i].reset();
        } else {
          states[i] = expected.state;
        }
      },
      debt);
}

TEST(ScriptParityTest, MemoryArithmeticMatchesTheScriptOnRandomSchedules) {
  RunTokenBucketSchedule("parity:", 20261202, &TakeTokens, /*debt=*/false);
}

// A bucket that goes into debt (Envoy's rate limit service counting every hit, a cost reported
// after the fact): the script and TakeTokensInDebt, state and replies, with costs past the
// capacity.
TEST(ScriptParityTest, DebtMatchesTheScriptOnRandomSchedules) {
  RunTokenBucketSchedule("debt:", 20261205, &TakeTokensInDebt, /*debt=*/true);
}

// The compact layout keeps the same numbers, exactly: the arithmetic is the same, and the packed
// doubles need no decimal conversion.
TEST(ScriptParityTest, CompactLayoutMatchesTheMemoryArithmetic) {
  RunTokenBucketSchedule("compact:", 20261206, &TakeTokens, /*debt=*/false, BucketLayout::kCompact);
  RunTokenBucketSchedule("compact-debt:", 20261207, &TakeTokensInDebt, /*debt=*/true,
                         BucketLayout::kCompact);
}

TEST(ScriptParityTest, GcraArithmeticMatchesItsScriptOnRandomSchedules) {
  const std::string script = testing::ScriptWithClockFromArguments(Algorithm::kGcra);
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

// Nothing expires: the script must itself count nothing from a key whose window has ended, as it
// does in the millisecond before Redis drops such a key.
TEST(ScriptParityTest, FixedWindowArithmeticMatchesItsScriptOnRandomSchedules) {
  const std::string script = testing::ScriptWithClockFromArguments(Algorithm::kFixedWindow);
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

// --- Several checks in one call against each check in a call of its own ----------------------

struct CallCheck {
  std::vector<size_t> buckets;  // distinct
  std::vector<Limit> limits;
  std::vector<int64_t> costs;
  std::string codes;
};

// What a key holds, its recorded expiry included, as one comparable string; a key that is gone
// leaves a recorded expiry that means nothing, and a window that has ended by `now_ms` is gone
// (Redis drops it then; here nothing expires).
std::string StoredAt(testing::RedisClient& client, const std::string& key, int64_t now_ms) {
  const std::string type = client.String({"TYPE", key});
  const std::string end = client.String({"GET", key + ":end"});
  if (type == "none" || (!end.empty() && std::stoll(end) <= now_ms)) return "none";
  std::string stored = type + "|";
  testing::ReplyPtr value =
      type == "hash" ? client.Command({"HGETALL", key}) : client.Command({"GET", key});
  if (value->type == REDIS_REPLY_STRING) stored.append(value->str, value->len);  // may be binary
  for (size_t i = 0; value->type == REDIS_REPLY_ARRAY && i < value->elements; ++i) {
    stored += std::string(value->element[i]->str) + ",";
  }
  for (const char* suffix : {":ttl", ":end"}) {
    testing::ReplyPtr extra = client.Command({"GET", key + suffix});
    stored += std::string("|") + (extra->type == REDIS_REPLY_STRING ? extra->str : "");
  }
  return stored;
}

// "[0 +2 '1', 3 -1 '1'] ..." for a failure's message: each check's buckets, costs and codes.
std::string Describe(const std::vector<CallCheck>& checks) {
  std::string text;
  for (const CallCheck& check : checks) {
    text += "[";
    for (size_t k = 0; k < check.buckets.size(); ++k) {
      text += std::to_string(check.buckets[k]) + " " + std::to_string(check.costs[k]) + " '" +
              check.codes[k] + "' ";
    }
    text += "] ";
  }
  return text;
}

std::vector<long long> Integers(const testing::ReplyPtr& reply) {
  EXPECT_EQ(reply->type, REDIS_REPLY_ARRAY) << (reply->str ? reply->str : "");
  std::vector<long long> values;
  for (size_t i = 0; reply->type == REDIS_REPLY_ARRAY && i < reply->elements; ++i) {
    values.push_back(reply->element[i]->integer);
  }
  return values;
}

// One call of `checks` on keys PREFIX0.., with its codes, then the clock.
std::vector<std::string> Call(const std::string& sha, const std::string& prefix,
                              const std::vector<CallCheck>& checks, int64_t now_ms) {
  std::vector<std::string> keys;
  std::vector<std::string> numbers;
  std::string codes;
  for (const CallCheck& check : checks) {
    for (size_t k = 0; k < check.buckets.size(); ++k) {
      keys.push_back(prefix + std::to_string(check.buckets[k]));
      const Limit& limit = check.limits[k];
      for (int64_t n : {limit.capacity, limit.tokens, limit.period_ms, check.costs[k]}) {
        numbers.push_back(std::to_string(n));
      }
    }
    codes += (codes.empty() ? "" : " ") + check.codes;
  }
  std::vector<std::string> command = {"EVALSHA", sha, std::to_string(keys.size())};
  command.insert(command.end(), keys.begin(), keys.end());
  command.insert(command.end(), numbers.begin(), numbers.end());
  command.push_back(codes);
  command.push_back(std::to_string(now_ms / 1000));
  command.push_back(std::to_string(now_ms % 1000 * 1000));
  return command;
}

// Random calls of up to six checks, with keys again in later checks of a call, refunds, up-to
// ops (token bucket) and all-or-nothing checks, and for the buckets several limits on one key
// (as while gateways reload a changed rule; a fixed window keeps one, its windows being the
// limit's): one call of them all must answer and store exactly what a call per check, in the
// same order at the same instant, does.
class CallOfChecksParityTest : public ::testing::TestWithParam<std::pair<Algorithm, BucketLayout>> {
};

// Draws a number in [low, high].
int64_t Draw(std::mt19937_64& rng, int64_t low, int64_t high) {
  return std::uniform_int_distribution<int64_t>(low, high)(rng);
}

// One op of `check` on `bucket` under `limit`: a token bucket's may take up to its cost, or into
// debt (past the capacity too); an all-or-nothing check's ops are plain or its own.
void DrawOp(CallCheck& check, size_t bucket, const Limit& limit, bool may_differ,
            bool all_or_nothing, std::mt19937_64& rng) {
  const int64_t mode = may_differ ? Draw(rng, 0, 5) : 5;
  check.buckets.push_back(bucket);
  check.limits.push_back(limit);
  if (mode == 0) {
    check.costs.push_back(Draw(rng, 0, limit.capacity));
    check.codes.push_back('u');
  } else if (mode == 1) {
    check.costs.push_back(Draw(rng, 0, 2 * limit.capacity + 1));
    check.codes.push_back('d');
  } else {
    check.costs.push_back(Draw(rng, -1, 2));
    check.codes.push_back(all_or_nothing && Draw(rng, 0, 2) > 0 ? '1' : '0');
  }
}

// One to six checks, each on one to three of `buckets` buckets.
std::vector<CallCheck> DrawChecks(Algorithm algorithm, const std::vector<Limit>& limits,
                                  size_t buckets, std::mt19937_64& rng) {
  std::vector<CallCheck> checks(static_cast<size_t>(Draw(rng, 1, 6)));
  for (CallCheck& check : checks) {
    std::vector<size_t> chosen(buckets);
    std::iota(chosen.begin(), chosen.end(), 0);
    std::shuffle(chosen.begin(), chosen.end(), rng);
    chosen.resize(static_cast<size_t>(Draw(rng, 1, 3)));
    const bool all_or_nothing = Draw(rng, 0, 3) == 0;
    for (size_t bucket : chosen) {
      const Limit& limit =
          limits[algorithm == Algorithm::kFixedWindow ? bucket % 2
                                                      : static_cast<size_t>(Draw(rng, 0, 1))];
      DrawOp(check, bucket, limit, algorithm == Algorithm::kTokenBucket && !all_or_nothing,
             all_or_nothing, rng);
    }
  }
  return checks;
}

TEST_P(CallOfChecksParityTest, OneCallOfChecksEqualsACallPerCheck) {
  const auto [algorithm, layout] = GetParam();
  testing::RedisServer server;
  auto client = server.Client();
  const std::string sha =
      client->String({"SCRIPT", "LOAD", testing::ScriptWithClockFromArguments(algorithm, layout)});
  const std::vector<Limit> limits = algorithm == Algorithm::kFixedWindow
                                        ? std::vector<Limit>{{3, 3, 1'000}, {5, 5, 700}}
                                        : std::vector<Limit>{{3, 1, 1'000}, {5, 2, 700}};
  constexpr size_t kBuckets = 4;
  std::mt19937_64 rng(20261203 + static_cast<int>(algorithm));
  int64_t now_ms = 1'764'720'000'000;
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    now_ms += Draw(rng, 0, 400);
    const std::vector<CallCheck> checks = DrawChecks(algorithm, limits, kBuckets, rng);
    const std::vector<long long> together =
        Integers(client->Command(Call(sha, "a:", checks, now_ms)));
    std::vector<long long> apart;
    for (const CallCheck& check : checks) {
      const std::vector<long long> one =
          Integers(client->Command(Call(sha, "b:", {check}, now_ms)));
      apart.insert(apart.end(), one.begin(), one.end());
    }
    ASSERT_EQ(together, apart) << Describe(checks);
    for (size_t bucket = 0; bucket < kBuckets; ++bucket) {
      ASSERT_EQ(StoredAt(*client, "a:" + std::to_string(bucket), now_ms),
                StoredAt(*client, "b:" + std::to_string(bucket), now_ms))
          << "bucket " << bucket << " after " << Describe(checks);
    }
  }
}

std::string ScriptName(const ::testing::TestParamInfo<std::pair<Algorithm, BucketLayout>>& info) {
  static constexpr const char* kNames[] = {"TokenBucket", "Gcra", "FixedWindow"};
  return std::string(kNames[static_cast<size_t>(info.param.first)]) +
         (info.param.second == BucketLayout::kCompact ? "Compact" : "");
}

INSTANTIATE_TEST_SUITE_P(
    Scripts, CallOfChecksParityTest,
    ::testing::Values(std::make_pair(Algorithm::kTokenBucket, BucketLayout::kHash),
                      std::make_pair(Algorithm::kTokenBucket, BucketLayout::kCompact),
                      std::make_pair(Algorithm::kGcra, BucketLayout::kHash),
                      std::make_pair(Algorithm::kFixedWindow, BucketLayout::kHash)),
    ScriptName);

}  // namespace
}  // namespace sluice
