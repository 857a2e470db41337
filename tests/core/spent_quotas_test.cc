#include "core/spent_quotas.h"
#include "support/manual_clock.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

const QuotaOp kOp{"monthly", "org_acme", 100, 1, {CalendarPeriod::kMonth, 0}, true};

// The store's answer that the quota had `used` in a window that ends `left_ms` after `now_ms`.
QuotaReply Rejected(int64_t used, int64_t left_ms, int64_t now_ms = 5'000'000) {
  return {false, false, used, now_ms - 1000, now_ms + left_ms, now_ms};
}

TEST(SpentQuotasTest, ASpentQuotaIsRejectedUntilItsWindowEnds) {
  auto clock = std::make_shared<testing::ManualClock>(0);
  SpentQuotas spent(clock, 10);
  spent.Remember(kOp, Rejected(100, 60'000), 0, spent.Changes());
  std::optional<QuotaReply> known = spent.Rejection(kOp);
  ASSERT_TRUE(known);
  EXPECT_FALSE(known->allowed);
  EXPECT_EQ(known->used, 100);
  clock->Advance(59'999);
  known = spent.Rejection(kOp);
  ASSERT_TRUE(known);
  EXPECT_EQ(known->window_end_ms - known->now_ms, 1);  // the store's clock, moved on
  clock->Advance(1);
  EXPECT_FALSE(spent.Rejection(kOp));
  EXPECT_EQ(spent.size(), 0U);
}

TEST(SpentQuotasTest, TheWindowEndIsCountedFromWhenTheCheckWasAsked) {
  auto clock = std::make_shared<testing::ManualClock>(1000);
  SpentQuotas spent(clock, 10);
  // Asked at 0, answered at 1000: the window ended 60 s after the store decided, at most 60 s
  // after the question.
  spent.Remember(kOp, Rejected(100, 60'000), 0, spent.Changes());
  clock->Set(60'000);
  EXPECT_FALSE(spent.Rejection(kOp));
}

TEST(SpentQuotasTest, OnlyWhatCannotFitIsRejected) {
  auto clock = std::make_shared<testing::ManualClock>(0);
  SpentQuotas spent(clock, 10);
  spent.Remember(kOp, Rejected(98, 60'000), 0, spent.Changes());  // a cost of 5 did not fit
  EXPECT_FALSE(spent.Rejection(kOp));                             // a cost of 1 may
  QuotaOp five = kOp;
  five.cost = 3;
  EXPECT_TRUE(spent.Rejection(five));
  QuotaOp raised = five;
  raised.limit = 200;  // a reload raised the limit
  EXPECT_FALSE(spent.Rejection(raised));
  QuotaOp shadow = five;
  shadow.enforced = false;
  EXPECT_FALSE(spent.Rejection(shadow));
  QuotaOp look = five;
  look.cost = 0;
  EXPECT_FALSE(spent.Rejection(look));
  QuotaOp daily = five;
  daily.window = {CalendarPeriod::kDay, 0};  // the rule's window changed
  EXPECT_FALSE(spent.Rejection(daily));
}

TEST(SpentQuotasTest, AllowedRepliesAreNotRemembered) {
  auto clock = std::make_shared<testing::ManualClock>(0);
  SpentQuotas spent(clock, 10);
  QuotaReply allowed = Rejected(100, 60'000);
  allowed.allowed = true;
  spent.Remember(kOp, allowed, 0, spent.Changes());
  EXPECT_EQ(spent.size(), 0U);
}

TEST(SpentQuotasTest, ForgetAndClearDropWhatARestWouldMakeWrong) {
  auto clock = std::make_shared<testing::ManualClock>(0);
  SpentQuotas spent(clock, 10);
  spent.Remember(kOp, Rejected(100, 60'000), 0, spent.Changes());
  QuotaOp other = kOp;
  other.value = "org_other";
  spent.Remember(other, Rejected(100, 60'000), 0, spent.Changes());
  spent.Forget("monthly", "org_acme");
  EXPECT_FALSE(spent.Rejection(kOp));
  EXPECT_TRUE(spent.Rejection(other));
  spent.Clear();
  EXPECT_FALSE(spent.Rejection(other));
}

// A reset's notice can arrive (on the listening connection) before the reply of a check that was
// decided before the reset (on another): that reply's count is stale and is not remembered.
TEST(SpentQuotasTest, AReplySentBeforeAResetIsNotRememberedAfterIt) {
  auto clock = std::make_shared<testing::ManualClock>(0);
  SpentQuotas spent(clock, 10);
  QuotaOp other = kOp;
  other.value = "org_other";
  const uint64_t sent = spent.Changes();                // the check goes
  spent.Forget("monthly", "org_acme");                  // the reset's notice comes first
  spent.Remember(kOp, Rejected(100, 60'000), 0, sent);  // then the check's reply
  EXPECT_FALSE(spent.Rejection(kOp));
  const uint64_t sent_again = spent.Changes();
  spent.Clear();  // the listening connection came back: notices may have been missed
  spent.Remember(other, Rejected(100, 60'000), 0, sent_again);
  EXPECT_FALSE(spent.Rejection(other));
  spent.Remember(kOp, Rejected(100, 60'000), 0, spent.Changes());  // sent after: remembered
  EXPECT_TRUE(spent.Rejection(kOp));
}

TEST(SpentQuotasTest, ItHoldsNoMoreThanItsBound) {
  auto clock = std::make_shared<testing::ManualClock>(0);
  SpentQuotas spent(clock, 2);
  for (int i = 0; i < 5; ++i) {
    QuotaOp op = kOp;
    op.value = "v" + std::to_string(i);
    spent.Remember(op, Rejected(100, int64_t{1000} * (i + 1)), 0, spent.Changes());
  }
  EXPECT_EQ(spent.size(), 2U);
  clock->Set(1500);  // the first has ended: room for another
  QuotaOp late = kOp;
  late.value = "late";
  spent.Remember(late, Rejected(100, 60'000, 5'000'000), 1500, spent.Changes());
  EXPECT_TRUE(spent.Rejection(late));
}

// Room is made by dropping the entries that ended, in the order they end: an entry remembered
// again with a later end is kept by its new end.
TEST(SpentQuotasTest, RoomIsMadeByTheEntriesThatEnded) {
  auto clock = std::make_shared<testing::ManualClock>(0);
  SpentQuotas spent(clock, 2);
  QuotaOp a = kOp;
  a.value = "a";
  QuotaOp b = kOp;
  b.value = "b";
  QuotaOp c = kOp;
  c.value = "c";
  spent.Remember(a, Rejected(100, 1000), 0, spent.Changes());
  spent.Remember(b, Rejected(100, 2000), 0, spent.Changes());
  spent.Remember(a, Rejected(100, 5000), 0, spent.Changes());  // a's window, seen again, later
  clock->Set(1500);
  spent.Remember(c, Rejected(100, 60'000, 5'000'000), 1500, spent.Changes());
  EXPECT_TRUE(spent.Rejection(a));  // not dropped by the end it no longer has
  EXPECT_TRUE(spent.Rejection(b));
  EXPECT_FALSE(spent.Rejection(c));  // no room
  clock->Set(2000);                  // b ends: room for c
  spent.Remember(c, Rejected(100, 60'000, 5'000'000), 2000, spent.Changes());
  EXPECT_TRUE(spent.Rejection(c));
  EXPECT_TRUE(spent.Rejection(a));
  EXPECT_EQ(spent.size(), 2U);
  spent.Forget("monthly", "a");
  clock->Set(5000);  // a's old end: nothing of it is left to drop
  EXPECT_TRUE(spent.Rejection(c));
  EXPECT_EQ(spent.size(), 1U);
}

}  // namespace
}  // namespace sluice
