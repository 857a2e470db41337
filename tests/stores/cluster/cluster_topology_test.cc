#include "topology.h"

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <memory>
#include <string>

#include "reply.h"

namespace sluice::cluster {
namespace {

using redis::ReplyPtr;

// A reply as hiredis reads it from RESP text.
ReplyPtr Parse(const std::string& resp) {
  redisReader* reader = redisReaderCreate();
  redisReaderFeed(reader, resp.data(), resp.size());
  void* reply = nullptr;
  EXPECT_EQ(redisReaderGetReply(reader, &reply), REDIS_OK);
  redisReaderFree(reader);
  EXPECT_NE(reply, nullptr) << "incomplete RESP";
  return ReplyPtr(static_cast<redisReply*>(reply));
}

std::string Bulk(const std::string& s) {
  return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

std::string Node(const std::string& ip, int port, const std::string& role,
                 const std::string& health) {
  return "*12\r\n" + Bulk("id") + Bulk("abc") + Bulk("port") + ":" + std::to_string(port) + "\r\n" +
         Bulk("ip") + Bulk(ip) + Bulk("endpoint") + Bulk(ip) + Bulk("role") + Bulk(role) +
         Bulk("health") + Bulk(health);
}

TEST(ClusterTopologyTest, ShardsGiveEachShardsOnlineMaster) {
  const std::string reply =
      "*2\r\n"
      "*4\r\n" +
      Bulk("slots") + "*4\r\n:0\r\n:100\r\n:200\r\n:300\r\n" + Bulk("nodes") + "*2\r\n" +
      Node("10.0.0.2", 7002, "replica", "online") + Node("10.0.0.1", 7001, "master", "online") +
      "*4\r\n" + Bulk("slots") + "*2\r\n:101\r\n:199\r\n" + Bulk("nodes") + "*1\r\n" +
      Node("10.0.0.3", 7003, "master", "fail");
  Result<std::vector<SlotRange>> ranges = ParseClusterShards(*Parse(reply), "asked");
  ASSERT_TRUE(ranges.ok()) << ranges.status().message();
  // The failed master's shard is left out: its slots have no one to serve them.
  EXPECT_EQ(*ranges, (std::vector<SlotRange>{{0, 100, "10.0.0.1", 7001, ""},
                                             {200, 300, "10.0.0.1", 7001, ""}}));
}

TEST(ClusterTopologyTest, SlotsGiveTheFirstNodeOfEachRange) {
  const std::string reply = "*1\r\n*4\r\n:0\r\n:16383\r\n*3\r\n" + Bulk("127.0.0.1") + ":7001\r\n" +
                            Bulk("id1") + "*3\r\n" + Bulk("127.0.0.1") + ":7004\r\n" + Bulk("id4");
  Result<std::vector<SlotRange>> ranges = ParseClusterSlots(*Parse(reply), "asked");
  ASSERT_TRUE(ranges.ok()) << ranges.status().message();
  EXPECT_EQ(*ranges, (std::vector<SlotRange>{{0, 16383, "127.0.0.1", 7001, ""}}));
}

TEST(ClusterTopologyTest, AnUnknownAddressIsTheHostAsked) {
  const std::string reply = "*1\r\n*4\r\n" + Bulk("slots") + "*2\r\n:0\r\n:16383\r\n" +
                            Bulk("nodes") + "*1\r\n" + Node("", 7001, "master", "online");
  Result<std::vector<SlotRange>> ranges = ParseClusterShards(*Parse(reply), "10.1.2.3");
  ASSERT_TRUE(ranges.ok()) << ranges.status().message();
  EXPECT_EQ(*ranges, (std::vector<SlotRange>{{0, 16383, "10.1.2.3", 7001, ""}}));
  const std::string slots = "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n" + Bulk("?") + ":7001\r\n";
  ranges = ParseClusterSlots(*Parse(slots), "10.1.2.3");
  ASSERT_TRUE(ranges.ok()) << ranges.status().message();
  EXPECT_EQ(ranges->front().host, "10.1.2.3");
}

// A node of a cluster with tls-cluster yes has a TLS port beside (or instead of) its plaintext
// one, and may announce a hostname: the name its certificate is verified against.
TEST(ClusterTopologyTest, TlsClientsTakeTheTlsPortAndTheAnnouncedHostname) {
  const std::string node = "*12\r\n" + Bulk("port") + ":7001\r\n" + Bulk("tls-port") + ":8001\r\n" +
                           Bulk("ip") + Bulk("10.0.0.1") + Bulk("hostname") +
                           Bulk("node-1.redis.internal") + Bulk("role") + Bulk("master") +
                           Bulk("health") + Bulk("online");
  const std::string reply =
      "*1\r\n*4\r\n" + Bulk("slots") + "*2\r\n:0\r\n:16383\r\n" + Bulk("nodes") + "*1\r\n" + node;
  Result<std::vector<SlotRange>> tls = ParseClusterShards(*Parse(reply), "asked", true);
  ASSERT_TRUE(tls.ok()) << tls.status().message();
  EXPECT_EQ(*tls, (std::vector<SlotRange>{{0, 16383, "10.0.0.1", 8001, "node-1.redis.internal"}}));
  Result<std::vector<SlotRange>> plain = ParseClusterShards(*Parse(reply), "asked", false);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->front().port, 7001);
  // Only a TLS port: a plaintext client has nothing better.
  const std::string tls_only = "*1\r\n*4\r\n" + Bulk("slots") + "*2\r\n:0\r\n:16383\r\n" +
                               Bulk("nodes") + "*1\r\n*8\r\n" + Bulk("tls-port") + ":8002\r\n" +
                               Bulk("ip") + Bulk("10.0.0.2") + Bulk("role") + Bulk("master") +
                               Bulk("health") + Bulk("online");
  Result<std::vector<SlotRange>> only = ParseClusterShards(*Parse(tls_only), "asked", false);
  ASSERT_TRUE(only.ok());
  EXPECT_EQ(only->front().port, 8002);
  // CLUSTER SLOTS: the hostname in the node's metadata map.
  const std::string slots = "*1\r\n*3\r\n:0\r\n:16383\r\n*4\r\n" + Bulk("10.0.0.1") + ":8001\r\n" +
                            Bulk("id1") + "*2\r\n" + Bulk("hostname") +
                            Bulk("node-1.redis.internal");
  Result<std::vector<SlotRange>> from_slots = ParseClusterSlots(*Parse(slots), "asked");
  ASSERT_TRUE(from_slots.ok());
  EXPECT_EQ(from_slots->front().hostname, "node-1.redis.internal");
}

TEST(ClusterTopologyTest, MalformedTopologiesAreErrors) {
  EXPECT_FALSE(ParseClusterShards(*Parse(":1\r\n"), "h").ok());
  EXPECT_FALSE(
      ParseClusterShards(*Parse("*1\r\n*2\r\n" + Bulk("slots") + "*1\r\n:1\r\n"), "h").ok());
  EXPECT_FALSE(ParseClusterSlots(*Parse("*1\r\n*2\r\n:0\r\n:5\r\n"), "h").ok());
  const std::string first_after_last = "*1\r\n*3\r\n:9\r\n:5\r\n*2\r\n" + Bulk("h") + ":1\r\n";
  EXPECT_FALSE(ParseClusterSlots(*Parse(first_after_last), "h").ok());
  const std::string past_last = "*1\r\n*3\r\n:0\r\n:99999\r\n*2\r\n" + Bulk("h") + ":1\r\n";
  EXPECT_FALSE(ParseClusterSlots(*Parse(past_last), "h").ok());
}

TEST(ClusterTopologyTest, Redirections) {
  Result<Redirect> moved = ParseRedirect("MOVED 3999 127.0.0.1:6381");
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(moved->kind, Redirect::Kind::kMoved);
  EXPECT_EQ(moved->slot, 3999);
  EXPECT_EQ(moved->host, "127.0.0.1");
  EXPECT_EQ(moved->port, 6381);
  Result<Redirect> ask = ParseRedirect("ASK 1 ::1:7000");
  ASSERT_TRUE(ask.ok());
  EXPECT_EQ(ask->kind, Redirect::Kind::kAsk);
  EXPECT_EQ(ask->host, "::1");
  Result<Redirect> hostless = ParseRedirect("MOVED 7 :6380");
  ASSERT_TRUE(hostless.ok());
  EXPECT_EQ(hostless->host, "");
  EXPECT_EQ(hostless->port, 6380);
  for (const char* bad : {"MOVED", "MOVED 3999", "MOVED x 1.2.3.4:5", "MOVED 16384 h:1",
                          "MOVED 1 h:0", "MOVED 1 h:99999", "ASKING 1 h:1", "ERR unknown"}) {
    EXPECT_FALSE(ParseRedirect(bad).ok()) << bad;
  }
}

TEST(ClusterTopologyTest, TransientErrors) {
  for (const char* e : {"TRYAGAIN Multiple keys request during rehashing of slot",
                        "CLUSTERDOWN The cluster is down", "LOADING Redis is loading",
                        "READONLY You can't write against a read only replica.",
                        "MASTERDOWN Link with MASTER is down"}) {
    EXPECT_TRUE(IsTransientClusterError(e)) << e;
  }
  EXPECT_FALSE(IsTransientClusterError("ERR wrong number of arguments"));
  EXPECT_FALSE(IsTransientClusterError("CROSSSLOT Keys in request don't hash to the same slot"));
}

}  // namespace
}  // namespace sluice::cluster
