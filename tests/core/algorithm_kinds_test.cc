// The registry of algorithms: each is found by its value and its name, keeps its buckets under
// keys of its own, and its step is the arithmetic it names.
#include "core/algorithm_kind.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "sluice/fixed_window.h"
#include "sluice/gcra.h"

namespace sluice {
namespace {

TEST(AlgorithmKindsTest, EachIsFoundByValueAndNameUnderAPrefixOfItsOwn) {
  std::set<std::string_view> prefixes;
  for (const AlgorithmKind& kind : AlgorithmKinds()) {
    EXPECT_EQ(&AlgorithmOf(kind.id), &kind);
    EXPECT_EQ(AlgorithmNamed(kind.name), &kind);
    EXPECT_TRUE(prefixes.insert(kind.key_prefix).second) << kind.name;
  }
  EXPECT_EQ(AlgorithmKinds().front().id, Algorithm::kTokenBucket);  // the default
  EXPECT_EQ(AlgorithmNamed("leaky-bucket"), nullptr);
}

TEST(AlgorithmKindsTest, EachStepIsItsArithmetic) {
  const Limit limit{.capacity = 10, .tokens = 10, .period_ms = 1000};
  const int64_t now = 1'700'000'000'000;
  EXPECT_EQ(AlgorithmOf(Algorithm::kTokenBucket).take(std::nullopt, limit, 3, now).reply,
            TakeTokens(std::nullopt, limit, 3, now).reply);
  EXPECT_EQ(AlgorithmOf(Algorithm::kGcra).take(std::nullopt, limit, 3, now).reply,
            TakeGcra(std::nullopt, limit, 3, now).reply);
  EXPECT_EQ(AlgorithmOf(Algorithm::kFixedWindow).take(std::nullopt, limit, 3, now).reply,
            TakeFixedWindow(std::nullopt, limit, 3, now).reply);
  // A window's state is its count, carried in the state's tokens.
  BucketState seven;
  seven.tokens = 7;
  EXPECT_EQ(AlgorithmOf(Algorithm::kFixedWindow).take(seven, limit, 3, now).reply,
            TakeFixedWindow(7, limit, 3, now).reply);
}

TEST(AlgorithmKindsTest, OnlyAWindowRefusesARefillRateAndOnlyTheBucketTakesInPart) {
  const Limit refilling{.capacity = 10, .tokens = 5, .period_ms = 1000};
  EXPECT_TRUE(AlgorithmOf(Algorithm::kTokenBucket).validate(refilling).ok());
  EXPECT_TRUE(AlgorithmOf(Algorithm::kGcra).validate(refilling).ok());
  const Status window = AlgorithmOf(Algorithm::kFixedWindow).validate(refilling);
  EXPECT_NE(window.message().find("must equal capacity"), std::string::npos) << window.message();
  EXPECT_TRUE(AlgorithmOf(Algorithm::kTokenBucket).partial_takes);
  EXPECT_FALSE(AlgorithmOf(Algorithm::kGcra).partial_takes);
  EXPECT_FALSE(AlgorithmOf(Algorithm::kFixedWindow).partial_takes);
}

}  // namespace
}  // namespace sluice
