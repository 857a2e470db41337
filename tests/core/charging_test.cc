#include "core/charging.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sluice/memory_store.h"
#include "support/fake_store.h"
#include "support/manual_clock.h"

namespace sluice {
namespace {

// A bucket of `capacity` tokens that refills slowly enough never to matter within a test.
BucketOp Op(std::string key, int64_t capacity, int64_t cost = 1, bool enforced = true) {
  BucketOp op;
  op.key = std::move(key);
  op.limit = {capacity, capacity, 3'600'000};
  op.cost = cost;
  op.enforced = enforced;
  return op;
}

class ChargingTest : public ::testing::Test {
 protected:
  // Charges `ops` under `rules` and returns what became of them; every store here answers
  // inline, so the callback has run when Charge returns.
  Charges Run(const std::vector<BucketOp>& ops, const ChargeRules& rules) {
    std::optional<Charges> result;
    Charge(store_, ops, rules, FromCache(ops, rules), [&](Charges c) { result = std::move(c); });
    EXPECT_TRUE(result.has_value()) << "the store answers inline, so Charge must have called back";
    return result ? std::move(*result) : Charges{};
  }

  // Three ops whose second meets a refusing bucket, charged under `policy`; what is asked and
  // charged after the refusal is what policies differ in.
  Charges RunPastARefusal(MultiRulePolicy policy) {
    Charges c = Run({Op("a", 5), Op("full", 1), Op("b", 5)}, Rules(policy));
    EXPECT_TRUE(c.error.ok()) << c.error.message();
    EXPECT_EQ(c.ops.size(), 3u);
    return c;
  }

  ChargeRules Rules(MultiRulePolicy policy) {
    ChargeRules rules;
    rules.policy = policy;
    return rules;
  }

  // Tokens left in `key`'s bucket of `capacity`, read with a look (cost 0) that charges nothing.
  int64_t Left(const std::string& key, int64_t capacity) {
    std::optional<int64_t> left;
    memory_->Apply({Op(key, capacity, 0)}, [&](Result<std::vector<BucketReply>> r) {
      ASSERT_TRUE(r.ok());
      left = r->front().remaining;
    });
    return left.value_or(-1);
  }

  // The buckets that refuse: of one token, taken before the test.
  void SetUp() override {
    for (const char* key : {"full", "shadow"}) {
      memory_->Apply({Op(key, 1)},
                     [](const Result<std::vector<BucketReply>>& r) { ASSERT_TRUE(r.ok()); });
    }
  }

  std::shared_ptr<testing::ManualClock> clock_ = std::make_shared<testing::ManualClock>(0);
  std::shared_ptr<MemoryStore> memory_ = std::make_shared<MemoryStore>(clock_);
  std::shared_ptr<testing::FakeStore> store_ = std::make_shared<testing::FakeStore>(memory_);
};

TEST_F(ChargingTest, ChargeAllChargesEveryOpInOneCallEvenPastARefusal) {
  const Charges c = RunPastARefusal(MultiRulePolicy::kChargeAll);
  ASSERT_EQ(c.ops.size(), 3u);
  EXPECT_EQ(store_->calls(), 1);
  EXPECT_TRUE(c.ops[0].charged);
  EXPECT_FALSE(c.ops[1].charged);
  EXPECT_FALSE(c.ops[1].reply.allowed);
  EXPECT_TRUE(c.ops[2].charged);
  EXPECT_EQ(Left("b", 5), 4);
}

TEST_F(ChargingTest, StopAtFirstLeavesTheOpsAfterARefusalUnasked) {
  const Charges c = RunPastARefusal(MultiRulePolicy::kStopAtFirst);
  ASSERT_EQ(c.ops.size(), 3u);
  EXPECT_EQ(store_->calls(), 2);  // one op at a time, up to the refusal
  EXPECT_TRUE(c.ops[0].charged);
  EXPECT_TRUE(c.ops[1].answered);
  EXPECT_FALSE(c.ops[1].reply.allowed);
  EXPECT_FALSE(c.ops[2].answered);
  EXPECT_EQ(Left("b", 5), 5);
}

TEST_F(ChargingTest, StopAtFirstLooksAtTheRestWhenAsked) {
  ChargeRules rules = Rules(MultiRulePolicy::kStopAtFirst);
  rules.look_past_stop = true;
  const Charges c = Run({Op("full", 1), Op("b", 5)}, rules);
  ASSERT_TRUE(c.error.ok());
  ASSERT_TRUE(c.ops[1].answered);
  EXPECT_FALSE(c.ops[1].charged);
  EXPECT_EQ(c.ops[1].reply.remaining, 5);  // a look: nothing taken
  EXPECT_EQ(Left("b", 5), 5);
}

TEST_F(ChargingTest, AShadowOpsRefusalDoesNotStopThePlan) {
  const Charges c = Run({Op("shadow", 1, 1, /*enforced=*/false), Op("b", 5)},
                        Rules(MultiRulePolicy::kStopAtFirst));
  ASSERT_TRUE(c.error.ok());
  EXPECT_TRUE(c.ops[1].charged);
  EXPECT_EQ(Left("b", 5), 4);
}

TEST_F(ChargingTest, RefundGivesBackWhatTheOthersTookWhenOneRefuses) {
  const Charges c =
      Run({Op("a", 5), Op("full", 1), Op("b", 5, 3)}, Rules(MultiRulePolicy::kRefund));
  ASSERT_TRUE(c.error.ok());
  EXPECT_EQ(store_->calls(), 2);  // the charge, then one refund call
  EXPECT_FALSE(c.ops[0].charged);
  ASSERT_TRUE(c.ops[0].refunded.has_value());
  ASSERT_TRUE(c.ops[2].refunded.has_value());
  EXPECT_EQ(Left("a", 5), 5);
  EXPECT_EQ(Left("b", 5), 5);
  EXPECT_FALSE(c.refund_failed);
}

TEST_F(ChargingTest, ARefundTheStoreFailsLeavesTheTokensTakenAndSaysSo) {
  std::optional<Charges> result;
  const std::vector<BucketOp> ops = {Op("a", 5), Op("full", 1)};
  const ChargeRules rules = Rules(MultiRulePolicy::kRefund);
  store_->Hold(true);
  Charge(store_, ops, rules, FromCache(ops, rules), [&](Charges c) { result = std::move(c); });
  // The charge came before the store failed; the refund it leads to comes after.
  store_->FailWith(Status::Unavailable("store down"));
  store_->Release();
  store_->Release();
  ASSERT_TRUE(result.has_value());
  EXPECT_TRUE(result->refund_failed);
  EXPECT_TRUE(result->ops[0].charged);
  store_->FailWith(Status());
  store_->Hold(false);
  EXPECT_EQ(Left("a", 5), 4);
}

TEST_F(ChargingTest, AllOrNothingChargesNothingWhenOneRefuses) {
  const Charges c = Run({Op("a", 5), Op("full", 1)}, Rules(MultiRulePolicy::kAllOrNothing));
  ASSERT_TRUE(c.error.ok());
  EXPECT_EQ(store_->calls(), 1);
  EXPECT_TRUE(store_->Calls().front().all_or_nothing);
  EXPECT_FALSE(c.ops[0].charged);
  EXPECT_FALSE(c.fell_back_to_refund);
  EXPECT_EQ(Left("a", 5), 5);
}

TEST_F(ChargingTest, AllOrNothingWithRepeatedKeysIsMadeTheRefundWay) {
  ChargeRules rules = Rules(MultiRulePolicy::kAllOrNothing);
  rules.keys_may_repeat = true;
  const Charges c = Run({Op("a", 3, 2), Op("a", 3, 2)}, rules);
  ASSERT_TRUE(c.error.ok());
  EXPECT_TRUE(c.fell_back_to_refund);
  EXPECT_FALSE(c.ops[1].reply.allowed);  // the second round saw what the first took
  EXPECT_EQ(Left("a", 3), 3);            // and the first's cost came back
}

TEST_F(ChargingTest, RefusedOpsPayTheirOwnCostWhenTheRulesSay) {
  ChargeRules rules = Rules(MultiRulePolicy::kAllOrNothing);
  rules.refused_pay_own = true;
  std::vector<BucketOp> ops = {Op("a", 5), Op("debtor", 2, 3)};
  ops[1].debt = true;
  const Charges c = Run(ops, rules);
  ASSERT_TRUE(c.error.ok());
  EXPECT_FALSE(c.ops[0].charged);
  EXPECT_TRUE(c.ops[1].charged);
  EXPECT_EQ(Left("a", 5), 5);
  EXPECT_EQ(Left("debtor", 2), 0);  // into debt by its own hits (2 if they went uncounted)
}

TEST_F(ChargingTest, RepeatedKeysGoInRoundsSoTheLaterSeesTheEarlier) {
  ChargeRules rules = Rules(MultiRulePolicy::kChargeAll);
  rules.keys_may_repeat = true;
  const Charges c = Run({Op("a", 3, 2), Op("b", 3), Op("a", 3, 2)}, rules);
  ASSERT_TRUE(c.error.ok());
  EXPECT_EQ(store_->calls(), 2);
  EXPECT_TRUE(c.ops[0].charged);
  EXPECT_FALSE(c.ops[2].reply.allowed);
  EXPECT_EQ(Left("a", 3), 1);
}

TEST_F(ChargingTest, AStoreErrorIsTheChargesError) {
  store_->FailWith(Status::DeadlineExceeded("no answer"));
  const Charges c = Run({Op("a", 5)}, Rules(MultiRulePolicy::kChargeAll));
  EXPECT_EQ(c.error.code(), StatusCode::kDeadlineExceeded);
}

TEST_F(ChargingTest, TheOverLimitCacheRefusesTheWholePlanUntilTheRetryTime) {
  ChargeRules rules = Rules(MultiRulePolicy::kChargeAll);
  rules.over_limit_cache = std::make_shared<OverLimitCache>(clock_, 100);
  const std::vector<BucketOp> ops = {Op("a", 5), Op("full", 1)};
  const Charges first = Run(ops, rules);  // the store refuses, and the cache remembers
  ASSERT_FALSE(first.ops[1].reply.allowed);
  const int calls = store_->calls();
  const Charges cached = Run(ops, rules);
  EXPECT_TRUE(cached.from_cache);
  EXPECT_EQ(store_->calls(), calls);  // the store was not asked
  EXPECT_EQ(Left("a", 5), 4);         // and "a" was not charged again
  clock_->Advance(first.ops[1].reply.retry_ms);
  EXPECT_FALSE(Run(ops, rules).from_cache);
}

TEST_F(ChargingTest, TheCacheAnswersItsOwnOpsAndTheOthersAreOnlyLookedAt) {
  ChargeRules rules = Rules(MultiRulePolicy::kRefund);
  rules.over_limit_cache = std::make_shared<OverLimitCache>(clock_, 100);
  rules.cached = CachedOverLimit::kAnswersItsOp;
  rules.over_limit_cache->Remember("full", 10'000);
  const Charges c = Run({Op("full", 1), Op("b", 5)}, rules);
  ASSERT_TRUE(c.error.ok());
  EXPECT_TRUE(c.ops[0].from_cache);
  EXPECT_EQ(c.cache_answers, 1u);
  EXPECT_FALSE(c.from_cache);  // "b" still went to the store
  EXPECT_TRUE(c.ops[1].answered);
  EXPECT_EQ(Left("b", 5), 5);  // a look: the refused plan spares it
}

TEST_F(ChargingTest, GiveBackSumsARepeatedKeysRefundsAndNeverOverfills) {
  const std::vector<BucketOp> ops = {Op("a", 4, 3), Op("a", 4, 3)};
  Charges charged;
  charged.ops.resize(2);
  for (OpCharge& op : charged.ops) op.charged = true;
  memory_->Apply({Op("a", 4, 1)},
                 [](const Result<std::vector<BucketReply>>& r) { ASSERT_TRUE(r.ok()); });
  std::optional<Charges> result;
  const int before = store_->calls();
  GiveBack(store_, ops, charged, [&](Charges c) { result = std::move(c); });
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(store_->calls(), before + 1);
  ASSERT_EQ(store_->Calls().back().ops.size(), 1u);        // one refund for the key
  EXPECT_EQ(store_->Calls().back().ops.front().cost, -4);  // -6, bounded by the capacity
  EXPECT_EQ(Left("a", 4), 4);
  EXPECT_FALSE(result->ops[0].charged);
}

}  // namespace
}  // namespace sluice
