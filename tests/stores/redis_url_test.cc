#include <gtest/gtest.h>

#include "sluice/redis_store.h"

namespace sluice {
namespace {

TEST(RedisUrlTest, HostPortAndDatabase) {
  auto o = ParseRedisUrl("redis://10.1.2.3:6380/2");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->host, "10.1.2.3");
  EXPECT_EQ(o->port, 6380);
  EXPECT_EQ(o->db, 2);
  EXPECT_TRUE(o->password.empty());
}

TEST(RedisUrlTest, DefaultsAndCredentials) {
  auto plain = ParseRedisUrl("redis://cache");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->port, 6379);
  EXPECT_EQ(plain->db, 0);

  auto acl = ParseRedisUrl("redis://gateway:p%40ss@127.0.0.1:6379/0");
  ASSERT_TRUE(acl.ok());
  EXPECT_EQ(acl->username, "gateway");
  EXPECT_EQ(acl->password, "p@ss");

  auto password_only = ParseRedisUrl("redis://:secret@127.0.0.1");
  ASSERT_TRUE(password_only.ok());
  EXPECT_EQ(password_only->username, "");
  EXPECT_EQ(password_only->password, "secret");

  auto v6 = ParseRedisUrl("redis://[::1]:7000");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 7000);
}

TEST(RedisUrlTest, RefusesMalformedUrls) {
  for (const char* bad : {"", "http://x", "redis://", "redis://host:0", "redis://host:99999",
                          "redis://host:abc", "redis://host/-1", "redis://host/x",
                          "redis://u:%zz@host", "redis://[::1", "redis://:6379"}) {
    auto o = ParseRedisUrl(bad);
    EXPECT_FALSE(o.ok()) << bad;
    if (!o.ok()) {
      EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

}  // namespace
}  // namespace sluice
