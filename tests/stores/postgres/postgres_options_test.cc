#include "sluice/postgres_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice {
namespace {

TEST(PostgresOptionsTest, ReadsTheUrlAsLibpqDoes) {
  Result<PostgresUrl> url = ParsePostgresUrl("postgresql://gw:p%40ss@db.internal:5433/quotas");
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  EXPECT_EQ(url->host, "db.internal");
  EXPECT_EQ(url->port, "5433");
  EXPECT_EQ(url->dbname, "quotas");
  EXPECT_EQ(url->user, "gw");
  EXPECT_TRUE(url->has_password);
}

// libpq's own message quotes the part it failed on, or the whole URI: the password with it.
TEST(PostgresOptionsTest, AMalformedUrlsMessageNeverQuotesIt) {
  struct Case {
    std::string url;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {"postgresql://u:p%sSECRET@db/x", "two hex digits"},
           {"postgresql://u:SECRET%@db/x", "two hex digits"},
           {"postgresql://u:SECRET%00@db/x", "NUL"},
           {"postgresql://u@db/x?password=SE%zzCRET", "two hex digits"},
           {"postgresql://u:SECRET@[::1/x", "IPv6"},
           {"postgresql://u:SECRET@[]/x", "IPv6"},
           {"postgresql://u:SECRET@[::1]x/d", "after the host"},
           {"postgresql://u@db/x?password=SECRET&sslmode", "key=value"},
           {"postgresql://u@db/x?password=a=SECRET", "key=value"},
       }) {
    Result<PostgresUrl> url = ParsePostgresUrl(c.url);
    ASSERT_FALSE(url.ok()) << c.url;
    const std::string message = url.status().message();
    EXPECT_NE(message.find("malformed postgresql:// URL"), std::string::npos) << message;
    EXPECT_NE(message.find(c.says), std::string::npos) << message;
    EXPECT_EQ(message.find("SECRET"), std::string::npos) << message;
    EXPECT_EQ(message.find(c.url), std::string::npos) << message;
  }
}

TEST(PostgresOptionsTest, DescribeNamesNoCredential) {
  PostgresOptions options;
  options.url = "postgresql://gw:SECRET@db.internal/quotas";
  EXPECT_EQ(options.Describe(), "postgres db.internal:5432/quotas");
  options.url = "postgresql://gw:SE%zzCRET@db.internal/quotas";
  EXPECT_EQ(options.Describe(), "postgres (an unreadable URL)");
}

}  // namespace
}  // namespace sluice
