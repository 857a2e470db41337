// RFC 9112 section 3.2's Host and request-target rules, as the server applies them to every
// request before a handler sees it.
#include "http/request_target.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::http {
namespace {

namespace bhttp = boost::beast::http;
using Request = bhttp::request<bhttp::string_body, Fields>;

Request Make(const std::string& target, unsigned version = 11, const char* host = "a.example") {
  Request request{bhttp::verb::get, target, version};
  if (host != nullptr) request.set(bhttp::field::host, host);
  return request;
}

TEST(RequestTargetTest, ValidHosts) {
  for (const char* host : {"a.example", "a.example:8080", "127.0.0.1", "[::1]", "[::1]:443",
                           "xn--bcher-kva.example", "a_b.example", ""}) {
    EXPECT_TRUE(IsValidHost(host)) << host;
  }
  for (const char* host :
       {"a b", "a.example:80x", "a/b", "[::1", "[::1]x", "[]", "a@b", "a.example:80:90", "\x7f"}) {
    EXPECT_FALSE(IsValidHost(host)) << host;
  }
}

TEST(RequestTargetTest, Http11NeedsExactlyOneValidHost) {
  Request without = Make("/x", 11, nullptr);
  EXPECT_EQ(NormalizeHostAndTarget(without).message(), "an HTTP/1.1 request without Host");
  Request http10 = Make("/x", 10, nullptr);
  EXPECT_TRUE(NormalizeHostAndTarget(http10).ok());  // HTTP/1.0 may leave it out
  Request twice = Make("/x");
  twice.insert(bhttp::field::host, "b.example");
  EXPECT_EQ(NormalizeHostAndTarget(twice).message(), "more than one Host field");
  Request spaced = Make("/x", 11, "a b");
  EXPECT_EQ(NormalizeHostAndTarget(spaced).message(), "an invalid Host");
  Request fine = Make("/x");
  EXPECT_TRUE(NormalizeHostAndTarget(fine).ok());
  EXPECT_EQ(fine.target(), "/x");
}

TEST(RequestTargetTest, AnAbsoluteTargetBecomesOriginFormAndItsAuthorityTheHost) {
  Request request = Make("http://other.example:81/x/y?q=1", 11, "a.example");
  ASSERT_TRUE(NormalizeHostAndTarget(request).ok());
  EXPECT_EQ(request.target(), "/x/y?q=1");
  EXPECT_EQ(request[bhttp::field::host], "other.example:81");
  Request bare = Make("HTTPS://other.example", 10, nullptr);
  ASSERT_TRUE(NormalizeHostAndTarget(bare).ok());
  EXPECT_EQ(bare.target(), "/");
  EXPECT_EQ(bare[bhttp::field::host], "other.example");
  Request query = Make("http://other.example?q", 11);
  ASSERT_TRUE(NormalizeHostAndTarget(query).ok());
  EXPECT_EQ(query.target(), "/?q");
  for (const char* refused :
       {"ftp://other.example/x", "http:///x", "http://u:p@other.example/x", "http://a b/x"}) {
    Request bad = Make(refused);
    EXPECT_FALSE(NormalizeHostAndTarget(bad).ok()) << refused;
  }
  Request asterisk{bhttp::verb::options, "*", 11};
  asterisk.set(bhttp::field::host, "a.example");
  EXPECT_TRUE(NormalizeHostAndTarget(asterisk).ok());
  EXPECT_EQ(asterisk.target(), "*");
}

}  // namespace
}  // namespace sluice::http
