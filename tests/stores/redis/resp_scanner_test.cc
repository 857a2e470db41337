#include "resp_scanner.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "reply_reader.h"

namespace sluice::redis {
namespace {

// Scans `bytes` whole, then again a byte at a time: the two must agree, whatever the pieces.
Status ScanBothWays(std::string_view bytes, RespLimits limits = {}) {
  RespScanner whole(limits);
  Status at_once = whole.Scan(bytes);
  RespScanner pieces(limits);
  Status bytewise;
  for (size_t i = 0; i < bytes.size() && bytewise.ok(); ++i) {
    bytewise = pieces.Scan(bytes.substr(i, 1));
  }
  EXPECT_EQ(at_once.ok(), bytewise.ok()) << at_once.message() << " / " << bytewise.message();
  return at_once;
}

TEST(RespScannerTest, TakesWhatRedisSends) {
  // A script call's answer, errors, statuses, nils, nesting, a pub/sub message, extremes.
  EXPECT_TRUE(ScanBothWays("*8\r\n:1\r\n:9\r\n:0\r\n:100\r\n:0\r\n:0\r\n:-1\r\n:250\r\n").ok());
  EXPECT_TRUE(ScanBothWays("-NOSCRIPT No matching script.\r\n+OK\r\n$-1\r\n*-1\r\n*0\r\n").ok());
  EXPECT_TRUE(ScanBothWays("*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n$0\r\n\r\n").ok());
  EXPECT_TRUE(
      ScanBothWays("*2\r\n*2\r\n:0\r\n*1\r\n$3\r\na\r\n\r\n:-9223372036854775808\r\n").ok());
  EXPECT_TRUE(ScanBothWays(":9223372036854775807\r\n+a line with a \r in it\r\n").ok());
  // A reply may end anywhere in a read: what is scanned so far is fine.
  EXPECT_TRUE(ScanBothWays("*2\r\n$5\r\nhel").ok());
}

// The fuzzer's find: twelve bytes that made hiredis 0.14 calloc 4.4 GB of element pointers.
TEST(RespScannerTest, RefusesAnArrayLongerThanAnyReplySluiceReads) {
  const Status s = ScanBothWays("*555555554\r\n");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("555555554 elements"), std::string::npos) << s.message();
  EXPECT_TRUE(ScanBothWays("*1048576\r\n").ok());
  EXPECT_FALSE(ScanBothWays("*1048577\r\n").ok());
}

// Arrays within arrays are counted together: each header is a few bytes, each allocation 8 bytes
// an element, so nesting must not multiply the bound.
TEST(RespScannerTest, CountsTheElementsOfAReplyTogether) {
  RespLimits limits;
  limits.max_elements = 10;
  EXPECT_TRUE(ScanBothWays("*2\r\n*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n*4\r\n", limits).ok());
  EXPECT_FALSE(ScanBothWays("*2\r\n*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n*5\r\n", limits).ok());
  // The count starts again with each reply.
  EXPECT_TRUE(ScanBothWays("*10\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n"
                           "*10\r\n",
                           limits)
                  .ok());
}

TEST(RespScannerTest, RefusesABulkStringOrAReplyTooLong) {
  EXPECT_FALSE(ScanBothWays("$536870912\r\n").ok());  // Redis's own proto-max-bulk-len
  EXPECT_TRUE(ScanBothWays("$1048576\r\n").ok());
  EXPECT_FALSE(ScanBothWays("$1048577\r\n").ok());
  RespLimits limits;
  limits.max_reply_bytes = 16;
  EXPECT_TRUE(ScanBothWays("+0123456789abc\r\n+0123456789abc\r\n", limits).ok());
  EXPECT_FALSE(ScanBothWays("+0123456789abcd\r\n", limits).ok());
  EXPECT_FALSE(ScanBothWays("*2\r\n$3\r\nabc\r\n$3\r\n", limits).ok());
  // A line that never ends is a reply that never ends.
  EXPECT_FALSE(ScanBothWays(std::string(17, '+'), limits).ok());
}

TEST(RespScannerTest, RefusesWhatIsNotRespTwo) {
  for (const char* bytes :
       {"%1\r\n", "_\r\n", ",1.5\r\n", "hello\r\n", "$-2\r\n", "*-5\r\n", "*\r\n", ":-\r\n",
        ":12a\r\n", ":1\rx", ":+1\r\n", ":12345678901234567890\r\n", ":9223372036854775808\r\n",
        ":-9223372036854775809\r\n"}) {
    EXPECT_FALSE(ScanBothWays(bytes).ok()) << bytes;
  }
  std::string deep;
  for (int i = 0; i < 8; ++i) deep += "*1\r\n";
  EXPECT_TRUE(ScanBothWays(deep + ":1\r\n").ok());
  EXPECT_FALSE(ScanBothWays(deep + "*1\r\n").ok());
}

TEST(RespScannerTest, StaysFailed) {
  RespScanner scanner;
  EXPECT_FALSE(scanner.Scan("*555555554\r\n").ok());
  EXPECT_FALSE(scanner.Scan("+OK\r\n").ok());
}

// The hostile bytes never reach hiredis: the reader answers an error and no reply, and the
// replies before them are still read.
TEST(ReplyReaderTest, StopsAtADeclarationBeyondTheBounds) {
  ReplyReader reader;
  const std::string bytes = "+OK\r\n*555555554\r\n";
  const Status fed = reader.Feed(bytes.data(), bytes.size());
  EXPECT_FALSE(fed.ok());
  EXPECT_NE(fed.message().find("protocol error"), std::string::npos) << fed.message();

  ReplyReader good;
  const std::string replies = "+OK\r\n*2\r\n:1\r\n$2\r\nhi\r\n*1\r\n";
  ASSERT_TRUE(good.Feed(replies.data(), replies.size()).ok());
  Result<ReplyPtr> first = good.Next();
  ASSERT_TRUE(first.ok() && *first != nullptr);
  EXPECT_EQ(Text(**first), "OK");
  Result<ReplyPtr> second = good.Next();
  ASSERT_TRUE(second.ok() && *second != nullptr);
  EXPECT_EQ((*second)->elements, 2u);
  Result<ReplyPtr> partial = good.Next();
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(*partial, nullptr);
}

}  // namespace
}  // namespace sluice::redis
