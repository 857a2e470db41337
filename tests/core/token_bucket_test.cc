#include "sluice/token_bucket.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

const Limit k100PerMinute{100, 100, 60'000};

TEST(TokenBucketTest, MissingBucketIsFull) {
  TakeOutcome out = TakeTokens(std::nullopt, k100PerMinute, 1, 1'000);
  EXPECT_TRUE(out.reply.allowed);
  EXPECT_EQ(out.reply.remaining, 99);
  EXPECT_EQ(out.reply.retry_ms, 0);
  EXPECT_EQ(out.state, (BucketState{99, 1'000}));
}

TEST(TokenBucketTest, ExpiryIsTheTimeToRefill) {
  // The document: one request on a full 100-a-minute bucket expires in 600 ms.
  EXPECT_EQ(TakeTokens(std::nullopt, k100PerMinute, 1, 0).ttl_ms, 600);
  EXPECT_EQ(TakeTokens(std::nullopt, k100PerMinute, 10, 0).ttl_ms, 6'000);
}

TEST(TokenBucketTest, RejectsWhenEmptyWithRetryUntilEnoughTokens) {
  BucketState empty{0, 5'000};
  TakeOutcome out = TakeTokens(empty, k100PerMinute, 1, 5'000);
  EXPECT_FALSE(out.reply.allowed);
  EXPECT_EQ(out.reply.remaining, 0);
  EXPECT_EQ(out.reply.retry_ms, 600);
  EXPECT_EQ(TakeTokens(empty, k100PerMinute, 3, 5'000).reply.retry_ms, 1'800);
}

TEST(TokenBucketTest, RefillsWithElapsedTimeUpToCapacity) {
  BucketState empty{0, 0};
  EXPECT_EQ(TakeTokens(empty, k100PerMinute, 0, 599).reply.remaining, 0);
  EXPECT_EQ(TakeTokens(empty, k100PerMinute, 0, 600).reply.remaining, 1);
  EXPECT_EQ(TakeTokens(empty, k100PerMinute, 0, 30'000).reply.remaining, 50);
  EXPECT_EQ(TakeTokens(empty, k100PerMinute, 0, 3'600'000).reply.remaining, 100);
}

TEST(TokenBucketTest, ClockSteppingBackPausesRefillAndTakesNothing) {
  BucketState half{50, 10'000};
  TakeOutcome out = TakeTokens(half, k100PerMinute, 0, 4'000);
  EXPECT_EQ(out.reply.remaining, 50);
  EXPECT_EQ(out.state.tokens, 50);
}

TEST(TokenBucketTest, FullBucketIsForgottenAtOnce) {
  // Cost 0 on a missing bucket: nothing is taken, so there is nothing to keep.
  EXPECT_EQ(TakeTokens(std::nullopt, k100PerMinute, 0, 0).ttl_ms, 0);
}

TEST(TokenBucketTest, RefundNeverRaisesAboveCapacity) {
  TakeOutcome out = TakeTokens(BucketState{99.5, 0}, k100PerMinute, -5, 0);
  EXPECT_TRUE(out.reply.allowed);
  EXPECT_EQ(out.state.tokens, 100);
  EXPECT_EQ(out.ttl_ms, 0);
  EXPECT_EQ(TakeTokens(BucketState{40, 0}, k100PerMinute, -5, 0).state.tokens, 45);
}

TEST(TokenBucketTest, KeepsFractionsExactlyAsRedisStoresThem) {
  // Redis 7 stores 1/3 as 0.33333333333333331, which reads back as the same double.
  Limit third{10, 1, 3};
  TakeOutcome out = TakeTokens(BucketState{0, 0}, third, 0, 1);
  EXPECT_EQ(out.state.tokens, 1.0 / 3.0);
  // One request a millisecond on 1 token every 3 ms: every third is allowed.
  Limit one{1, 1, 3};
  std::optional<BucketState> state;
  std::string pattern;
  for (int64_t ms = 0; ms < 9; ++ms) {
    TakeOutcome take = TakeTokens(state, one, 1, ms);
    pattern += take.reply.allowed ? 'y' : 'n';
    state = take.state;
  }
  EXPECT_EQ(pattern, "ynnynnynn");
}

TEST(TokenBucketTest, ExactRateAsTwoIntegers) {
  // 100 a minute for 60 s refills exactly 100, with no drift from a rounded rate.
  Limit limit{1'000, 100, 60'000};
  BucketState state{0, 0};
  for (int minute = 1; minute <= 5; ++minute) {
    TakeOutcome out = TakeTokens(state, limit, 0, minute * 60'000);
    EXPECT_EQ(out.reply.remaining, 100 * minute);
    state = out.state;
  }
}

// A count reported after the fact is taken whole, past empty, into a debt of at most one
// period's tokens; the bucket refuses everything, looks included, until it is out of debt.
TEST(TokenBucketTest, ADebtIsTakenWholeBoundedAndRefusesUntilRepaid) {
  const Limit limit{20, 20, 60'000};  // one token every 3 s
  TakeOutcome out = TakeTokensInDebt(std::nullopt, limit, 15, 0);
  EXPECT_TRUE(out.reply.allowed);
  EXPECT_EQ(out.reply.remaining, 5);
  out = TakeTokensInDebt(out.state, limit, 7, 0);
  EXPECT_FALSE(out.reply.allowed);
  EXPECT_EQ(out.reply.remaining, 0);
  EXPECT_EQ(out.state.tokens, -2);
  EXPECT_EQ(out.reply.retry_ms, 6000);    // until out of debt
  EXPECT_EQ(out.reply.reset_ms, 66'000);  // until full: 22 tokens
  EXPECT_EQ(out.ttl_ms, 66'000);
  EXPECT_FALSE(TakeTokens(out.state, limit, 0, 5999).reply.allowed);  // a look, in debt
  EXPECT_TRUE(TakeTokens(out.state, limit, 0, 6000).reply.allowed);
  // However much is reported, at most one period's tokens are owed.
  out = TakeTokensInDebt(out.state, limit, 1'000'000, 0);
  EXPECT_EQ(out.state.tokens, -static_cast<double>(MaxDebt(limit)));
  EXPECT_EQ(out.reply.retry_ms, 60'000);
  // A bucket with room takes a look and a take as TakeTokens does.
  const TakeOutcome in_debt = TakeTokensInDebt(std::nullopt, limit, 3, 0);
  const TakeOutcome plain = TakeTokens(std::nullopt, limit, 3, 0);
  EXPECT_EQ(in_debt.reply, plain.reply);
  EXPECT_EQ(in_debt.state, plain.state);
}

}  // namespace
}  // namespace sluice
