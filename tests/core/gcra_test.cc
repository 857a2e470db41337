// GCRA against the token bucket on random schedules: the same limit gives the same decisions,
// except where the exact answer sits on a whole number and the two algorithms' doubles round it
// to different sides: a token count that is 0.9999999999999999 in one and 1 in the other, or a
// retry of 126.00000000000003 ms in one (127) and 126 in the other.
#include "sluice/gcra.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "sluice/token_bucket.h"

namespace sluice {
namespace {

// Within rounding of a whole number: where the two algorithms may part ways.
bool OnABoundary(double x) { return std::fabs(x - std::round(x)) < 1e-6 + 1e-12 * std::fabs(x); }

TEST(GcraTest, CountsDownThenRejectsWithTheRefillTime) {
  const Limit five_per_hour{5, 5, 3'600'000};
  std::optional<double> tat;
  for (int64_t left = 4; left >= 0; --left) {
    TakeOutcome out = TakeGcra(tat, five_per_hour, 1, 1'000);
    ASSERT_TRUE(out.reply.allowed);
    EXPECT_EQ(out.reply.remaining, left);
    tat = out.state.tat_ms;
  }
  TakeOutcome out = TakeGcra(tat, five_per_hour, 1, 1'000);
  EXPECT_FALSE(out.reply.allowed);
  EXPECT_EQ(out.reply.retry_ms, 720'000);
  EXPECT_EQ(out.ttl_ms, 3'600'000);  // empty: full again in one period
  EXPECT_TRUE(TakeGcra(tat, five_per_hour, 1, 721'000).reply.allowed);
}

TEST(GcraTest, ARefundNeverFillsPastFullAndAStepBackOnlyPauses) {
  const Limit limit{10, 10, 10'000};
  TakeOutcome out = TakeGcra(std::nullopt, limit, -5, 0);
  EXPECT_TRUE(out.reply.allowed);
  EXPECT_EQ(out.reply.remaining, 10);
  EXPECT_LE(out.ttl_ms, 0);  // full: nothing to keep
  // A clock that steps back 10 s: one number cannot tell, so up to that many tokens are gone
  // (unlike the token bucket, which only pauses), but never below empty.
  out = TakeGcra(std::nullopt, limit, 4, 50'000);
  EXPECT_EQ(TakeGcra(out.state.tat_ms, limit, 0, 49'000).reply.remaining, 5);
  EXPECT_EQ(TakeGcra(out.state.tat_ms, limit, 0, 40'000).reply.remaining, 0);
}

TEST(GcraTest, DecidesAsTheTokenBucketOnRandomSchedules) {
  // Intervals of a millisecond and more: the TAT is an absolute time in a double, good to about
  // a quarter of a microsecond today, so much faster rates round more (docs/limiter.md).
  const std::vector<Limit> limits = {{100, 100, 60'000},  {10, 10, 1'000},       {5, 1, 5'000},
                                     {7, 3, 1'000},       {1'000, 7, 1'000},     {1, 1, 3},
                                     {50, 1, 86'400'000}, {10'000, 1'000, 1'000}};
  std::mt19937_64 rng(20261202);
  int disagreements = 0;
  for (const Limit& limit : limits) {
    std::optional<BucketState> bucket;
    std::optional<double> tat;
    int64_t now = 1'764'633'600'000;
    const double interval =
        static_cast<double>(limit.period_ms) / static_cast<double>(limit.tokens);
    for (int step = 0; step < 5'000; ++step) {
      now += std::uniform_int_distribution<int64_t>(
          0, static_cast<int64_t>(std::ceil(interval * 2)))(rng);
      const int64_t cost =
          std::uniform_int_distribution<int64_t>(-1, std::min<int64_t>(limit.capacity, 3))(rng);
      const TakeOutcome tb = TakeTokens(bucket, limit, cost, now);
      const TakeOutcome gcra = TakeGcra(tat, limit, cost, now);
      const double before =
          tb.reply.allowed ? tb.state.tokens + static_cast<double>(cost) : tb.state.tokens;
      // The time until full rounds up each algorithm's own way too: to the same ms, or the next
      // (where both took, or both did not).
      if (tb.reply.allowed == gcra.reply.allowed) {
        ASSERT_LE(std::abs(tb.reply.reset_ms - gcra.reply.reset_ms), 1) << "step " << step;
      }
      BucketReply tb_reply = tb.reply;
      tb_reply.reset_ms = gcra.reply.reset_ms;
      if (tb_reply != gcra.reply) {
        ++disagreements;
        // Only where the exact count of tokens is a whole number, rounded to either side.
        const double retry_exact = (static_cast<double>(cost) - before) * interval;  // ms
        ASSERT_TRUE(OnABoundary(before) || OnABoundary(tb.state.tokens) || OnABoundary(retry_exact))
            << "limit " << limit.capacity << "/" << limit.tokens << " per " << limit.period_ms
            << " ms, step " << step << ": tokens " << before << ", cost " << cost
            << "; token bucket " << tb.reply.allowed << "/" << tb.reply.remaining << "/"
            << tb.reply.retry_ms << ", gcra " << gcra.reply.allowed << "/" << gcra.reply.remaining
            << "/" << gcra.reply.retry_ms;
      }
      bucket = tb.state;
      // GCRA follows the token bucket's state, so one rounding does not carry on.
      tat = static_cast<double>(now) +
            (static_cast<double>(limit.capacity) - tb.state.tokens) * interval;
      if (tb.ttl_ms <= 0) bucket.reset();
    }
  }
  // Each algorithm rounds its own way (the token bucket its refill rate, tokens/period; GCRA its
  // interval, period/tokens), so a count that is exactly whole in one may be a hair off in the
  // other: by one token in `remaining`, one ms in `retry_ms`, or a take at exactly the last
  // token. Only there, and rarely.
  EXPECT_LT(disagreements, 40'000 / 20);  // under 5%
  std::cout << "GCRA and the token bucket disagreed on " << disagreements
            << " of 40,000 random steps, each on a whole-token or whole-millisecond boundary\n";
}

}  // namespace
}  // namespace sluice
