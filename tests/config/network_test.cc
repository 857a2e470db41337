#include "config/network.h"

#include <gtest/gtest.h>

namespace sluice::config {
namespace {

namespace ip = boost::asio::ip;

bool In(const char* network, const char* address) {
  return Network::Parse(network)->Contains(ip::make_address(address));
}

TEST(NetworkTest, ContainsByPrefix) {
  EXPECT_TRUE(In("10.0.0.0/8", "10.200.3.4"));
  EXPECT_FALSE(In("10.0.0.0/8", "11.0.0.1"));
  EXPECT_TRUE(In("192.168.1.0/25", "192.168.1.127"));
  EXPECT_FALSE(In("192.168.1.0/25", "192.168.1.128"));
  EXPECT_TRUE(In("203.0.113.7", "203.0.113.7"));
  EXPECT_FALSE(In("203.0.113.7", "203.0.113.8"));
  EXPECT_TRUE(In("0.0.0.0/0", "8.8.8.8"));
  EXPECT_TRUE(In("2001:db8::/32", "2001:db8:1::5"));
  EXPECT_FALSE(In("2001:db8::/32", "2001:db9::5"));
  EXPECT_TRUE(In("10.0.0.0/8", "::ffff:10.1.2.3"));  // IPv4-mapped peers on a v6 socket
  EXPECT_FALSE(In("10.0.0.0/8", "::1"));
}

TEST(NetworkTest, RefusesJunk) {
  for (const char* bad :
       {"", "10.0.0.0/", "10.0.0.0/33", "::/129", "10.0.0.0/-1", "host/8", "1.2.3.4/8x"}) {
    EXPECT_FALSE(Network::Parse(bad).ok()) << bad;
  }
}

TEST(EndpointTest, ParsesHostAndPort) {
  EXPECT_EQ(*ParseEndpoint("0.0.0.0:8080"), (Endpoint{"0.0.0.0", 8080}));
  EXPECT_EQ(*ParseEndpoint("[::1]:9901"), (Endpoint{"::1", 9901}));
  EXPECT_EQ(ParseEndpoint("[::1]:9901")->ToString(), "[::1]:9901");
  for (const char* bad : {"8080", ":8080", "host:", "host:0", "host:70000", "[::1]", "host:80x"}) {
    EXPECT_FALSE(ParseEndpoint(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace sluice::config
