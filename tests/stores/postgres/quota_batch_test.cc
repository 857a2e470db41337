#include "quota_batch.h"

#include <gtest/gtest.h>

namespace sluice::postgres {
namespace {

TEST(QuotaBatchTest, ChecksBecomeArraysOfOneStatement) {
  const std::vector<QuotaOp> first = {
      {"monthly", "org_acme", 1000, 1, {CalendarPeriod::kMonth, 0}, true},
      {"hourly", std::string("a\"b\\c\0d", 7), 10, 2, {CalendarPeriod::kNone, 3'600'000}, false}};
  const std::vector<QuotaOp> second = {{"monthly", "", 1000, 0, {CalendarPeriod::kMonth, 0}, true}};
  const auto params = TakeParameters({&first, &second}, "");
  ASSERT_EQ(params.size(), 9U);
  EXPECT_EQ(params[0], "{1,1,2}");
  EXPECT_EQ(params[1], "{\"monthly\",\"hourly\",\"monthly\"}");
  // bytea's hex input, the backslash escaped for the array literal.
  EXPECT_EQ(params[2], "{\"\\\\x6f72675f61636d65\",\"\\\\x6122625c630064\",\"\\\\x\"}");
  EXPECT_EQ(params[3], "{1000,10,1000}");
  EXPECT_EQ(params[4], "{1,2,0}");
  EXPECT_EQ(params[5], "{\"month\",\"\",\"month\"}");
  EXPECT_EQ(params[6], "{0,3600000,0}");
  EXPECT_EQ(params[7], "{t,f,t}");
  EXPECT_FALSE(params[8]);
  EXPECT_EQ(TakeParameters({&second}, "2025-01-31 23:59:59.999+00")[8],
            "2025-01-31 23:59:59.999+00");
}

Rows TableOf(const std::vector<std::vector<std::string>>& cells) {
  return {cells.size(),
          [cells](size_t row, size_t column) -> std::string_view { return cells[row][column]; }};
}

TEST(QuotaBatchTest, RowsSplitIntoEachChecksReplies) {
  const auto replies = SplitReplies(TableOf({{"t", "t", "5", "100", "200", "150"},
                                             {"t", "f", "3", "100", "200", "150"},
                                             {"f", "f", "9", "0", "1000", "150"}}),
                                    {2, 1});
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  ASSERT_EQ(replies->size(), 2U);
  EXPECT_EQ((*replies)[0][0], (QuotaReply{true, true, 5, 100, 200, 150}));
  EXPECT_EQ((*replies)[0][1], (QuotaReply{true, false, 3, 100, 200, 150}));
  EXPECT_EQ((*replies)[1][0], (QuotaReply{false, false, 9, 0, 1000, 150}));
}

TEST(QuotaBatchTest, RowsOfTheWrongShapeAreAnError) {
  EXPECT_FALSE(SplitReplies(TableOf({{"t", "t", "5", "100", "200", "150"}}), {2}).ok());
  EXPECT_FALSE(SplitReplies(TableOf({{"yes", "t", "5", "100", "200", "150"}}), {1}).ok());
  EXPECT_FALSE(SplitReplies(TableOf({{"t", "t", "5x", "100", "200", "150"}}), {1}).ok());
}

TEST(QuotaBatchTest, ChangeNoticesNameAQuota) {
  auto quota = ChangedQuota("monthly:6f7200ff");
  ASSERT_TRUE(quota);
  EXPECT_EQ(quota->first, "monthly");
  EXPECT_EQ(quota->second, std::string("or\0\xff", 4));
  EXPECT_EQ(ChangedQuota("monthly:")->second, "");
  EXPECT_FALSE(ChangedQuota("monthly"));
  EXPECT_FALSE(ChangedQuota(":6f"));
  EXPECT_FALSE(ChangedQuota("monthly:6"));
  EXPECT_FALSE(ChangedQuota("monthly:zz"));
  EXPECT_EQ(Hex(std::string("\x00\x7f\xff", 3)), "007fff");
}

}  // namespace
}  // namespace sluice::postgres
