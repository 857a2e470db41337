#include "sluice/bucket_key.h"

#include <gtest/gtest.h>

#include <set>

namespace sluice {
namespace {

std::string Key(std::string_view bucket, std::string_view value) {
  Result<std::string> key = BucketKey("rl:", bucket, value);
  EXPECT_TRUE(key.ok()) << key.status().ToString();
  return key.ok() ? *key : "";
}

TEST(BucketKeyTest, DocumentKeys) {
  EXPECT_EQ(Key("ip", "203.0.113.42"), "rl:ip:203.0.113.42");
  EXPECT_EQ(Key("key", "ak_abc123"), "rl:key:ak_abc123");
  EXPECT_EQ(Key("tenant", "org_acme"), "rl:tenant:org_acme");
}

TEST(BucketKeyTest, HostileValuesAreEncoded) {
  EXPECT_EQ(Key("key", ""), "rl:key:");
  EXPECT_EQ(Key("key", "a b"), "rl:key:a%20b");
  EXPECT_EQ(Key("key", "a\r\nb"), "rl:key:a%0D%0Ab");
  EXPECT_EQ(Key("key", "x:y"), "rl:key:x%3Ay");
  EXPECT_EQ(Key("key", "{tag}"), "rl:key:%7Btag%7D");
  EXPECT_EQ(Key("key", "100%"), "rl:key:100%25");
  EXPECT_EQ(Key("ip", "2001:db8::1"), "rl:ip:2001%3Adb8%3A%3A1");
  EXPECT_EQ(Key("key", std::string("a\0b", 3)), "rl:key:a%00b");
}

TEST(BucketKeyTest, NoTwoBucketValuePairsShareAKey) {
  // Values built to collide with another rule's key if ':' or '%' were kept as they are.
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"key", "x"},        {"key", "tenant:x"}, {"tenant", "x"},    {"key", "x:"},
      {"key", "x%3A"},     {"key", "x%"},       {"key", ""},        {"key", " "},
      {"key", "%20"},      {"ip", "1.2.3.4"},   {"ip", "1.2.3.4 "}, {"header:X-A", "b"},
      {"header", "X-A:b"}, {"key", "X-A:b"}};
  std::set<std::string> keys;
  for (const auto& [bucket, value] : pairs) keys.insert(Key(bucket, value));
  EXPECT_EQ(keys.size(), pairs.size());
}

TEST(BucketKeyTest, RefusesOverlongValues) {
  EXPECT_TRUE(BucketKey("rl:", "key", std::string(kMaxAttributeValueBytes, 'a')).ok());
  Result<std::string> key = BucketKey("rl:", "key", std::string(10 * 1024, 'a'));
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.status().code(), StatusCode::kInvalidArgument);
}

TEST(BucketKeyTest, AHashTagWrapsTheEncodedValue) {
  EXPECT_EQ(*BucketKey("rl:", "second", "ak_abc123", true), "rl:second:{ak_abc123}");
  // Braces in the value are encoded, so the tag is always the whole value.
  EXPECT_EQ(*BucketKey("rl:", "ip", "{x}", true), "rl:ip:{%7Bx%7D}");
}

}  // namespace
}  // namespace sluice
