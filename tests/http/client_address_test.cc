#include "http/client_address.h"

#include <gtest/gtest.h>

namespace sluice::http {
namespace {

namespace ip = boost::asio::ip;

std::vector<config::Network> Trusted() {
  return {*config::Network::Parse("10.0.0.0/8"), *config::Network::Parse("2001:db8:ffff::/48")};
}

// With X-Forwarded-For, or with Forwarded when `forwarded` is given.
std::string Client(const char* peer, std::string_view xff, std::string_view forwarded = "") {
  return forwarded.empty() ? ClientAddress(Peer(ip::make_address(peer)), xff,
                                           config::ForwardingHeader::kXForwardedFor, Trusted())
                           : ClientAddress(Peer(ip::make_address(peer)), forwarded,
                                           config::ForwardingHeader::kForwarded, Trusted());
}

TEST(ClientAddressTest, UntrustedPeerIsTheClientWhateverItClaims) {
  EXPECT_EQ(Client("203.0.113.9", "198.51.100.1"), "203.0.113.9");
  EXPECT_EQ(Client("203.0.113.9", "", "for=198.51.100.1"), "203.0.113.9");
}

TEST(ClientAddressTest, TrustedPeerIsBelievedFromTheRight) {
  EXPECT_EQ(Client("10.0.0.5", "198.51.100.1"), "198.51.100.1");
  // The client may forge the left part; only hops added by trusted proxies count.
  EXPECT_EQ(Client("10.0.0.5", "6.6.6.6, 198.51.100.1, 10.0.0.7"), "198.51.100.1");
  EXPECT_EQ(Client("10.0.0.5", "10.0.0.8, 10.0.0.7"), "10.0.0.8");
  EXPECT_EQ(Client("10.0.0.5", ""), "10.0.0.5");
}

TEST(ClientAddressTest, ForwardedHeaderWhenConfigured) {
  EXPECT_EQ(Client("10.0.0.5", "", "for=192.0.2.60;proto=http;by=10.0.0.5"), "192.0.2.60");
  EXPECT_EQ(Client("10.0.0.5", "", "For=\"[2001:db8:cafe::17]:4711\""), "2001:db8:cafe::17");
  EXPECT_EQ(Client("10.0.0.5", "", "for=198.51.100.3, for=10.0.0.9"), "198.51.100.3");
}

TEST(ClientAddressTest, JunkStopsAtTheHopThatWroteIt) {
  EXPECT_EQ(Client("10.0.0.5", "198.51.100.1, garbage"), "10.0.0.5");
  EXPECT_EQ(Client("10.0.0.5", "198.51.100.1, 10.0.0.6, unknown"), "10.0.0.5");
  EXPECT_EQ(Client("10.0.0.5", "", "for=unknown"), "10.0.0.5");
  EXPECT_EQ(Client("10.0.0.5", "", "proto=https"), "10.0.0.5");
  // X-Forwarded-For syntax is not Forwarded syntax: a forged header in the other form is junk.
  EXPECT_EQ(ClientAddress(Peer(ip::make_address("10.0.0.5")), "for=198.51.100.9",
                          config::ForwardingHeader::kXForwardedFor, Trusted()),
            "10.0.0.5");
  EXPECT_EQ(Client("10.0.0.5", std::string(20'000, ',')), "10.0.0.5");
  EXPECT_EQ(Client("10.0.0.5", "1.2.3.4\r\nX-Evil: 1"), "10.0.0.5");
}

TEST(ClientAddressTest, PortsAndMappedAddresses) {
  EXPECT_EQ(Client("10.0.0.5", "198.51.100.1:5555"), "198.51.100.1");
  EXPECT_EQ(Client("10.0.0.5", "[2001:db8::1]:80"), "2001:db8::1");
  EXPECT_EQ(Client("::ffff:10.0.0.5", "198.51.100.1"), "198.51.100.1");
  EXPECT_EQ(Client("::ffff:203.0.113.9", ""), "203.0.113.9");
}

}  // namespace
}  // namespace sluice::http
