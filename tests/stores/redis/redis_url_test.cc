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

TEST(RedisUrlTest, RedissIsTls) {
  auto o = ParseRedisUrl("rediss://:pw@redis.internal:6380/1");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->tls, TlsOptions{});
  EXPECT_EQ(o->host, "redis.internal");
  EXPECT_EQ(o->port, 6380);
  EXPECT_EQ(o->db, 1);
  EXPECT_EQ(o->password, "pw");
  EXPECT_FALSE(ParseRedisUrl("redis://h")->tls);
  EXPECT_EQ(o->Describe(), "redis (TLS) redis.internal:6380");
}

TEST(RedisUrlTest, UnixSocket) {
  auto o = ParseRedisUrl("unix:///run/redis/redis.sock?db=4");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->unix_path, "/run/redis/redis.sock");
  EXPECT_EQ(o->db, 4);
  EXPECT_EQ(ParseRedisUrl("unix:///tmp/r.sock")->db, 0);
  EXPECT_EQ(o->Describe(), "redis unix:/run/redis/redis.sock");
  for (const char* bad : {"unix://", "unix://relative.sock", "unix:///s.sock?db=x",
                          "unix:///s.sock?database=1", "unix:///s.sock?db=-1"}) {
    EXPECT_FALSE(ParseRedisUrl(bad).ok()) << bad;
  }
}

TEST(RedisUrlTest, Sentinel) {
  auto o = ParseRedisUrl("sentinel://10.0.0.1:26379,[::1]:26380/my%2Dmaster?db=2");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  ASSERT_TRUE(o->sentinel);
  EXPECT_EQ(o->sentinel->sentinels, (std::vector<HostPort>{{"10.0.0.1", 26379}, {"::1", 26380}}));
  EXPECT_EQ(o->sentinel->master, "my-master");
  EXPECT_EQ(o->db, 2);
  EXPECT_EQ(o->Describe(), "redis sentinel master my-master");
  auto with_password = ParseRedisUrl("sentinel://:pw@h:1/m");
  ASSERT_TRUE(with_password.ok());
  EXPECT_EQ(with_password->password, "pw");  // the master's
  for (const char* bad : {"sentinel://h:1", "sentinel://h:1/", "sentinel:///m", "sentinel://h/m",
                          "sentinel://h:1,/m", "sentinel://h:1/m?db=z"}) {
    EXPECT_FALSE(ParseRedisUrl(bad).ok()) << bad;
  }
}

TEST(RedisUrlTest, HostPort) {
  EXPECT_EQ(*ParseHostPort("10.0.0.1:7001"), (HostPort{"10.0.0.1", 7001}));
  EXPECT_EQ(*ParseHostPort("[::1]:7001"), (HostPort{"::1", 7001}));
  for (const char* bad : {"", "h", ":1", "h:", "h:0", "h:65536", "[::1]", "h:x"}) {
    EXPECT_FALSE(ParseHostPort(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace sluice
