// Addresses as configuration writes them: "host:port", and networks in CIDR notation.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/status.h"

namespace sluice::config {

// A host and port to listen on or connect to.
struct Endpoint {
  std::string host;
  uint16_t port = 0;

  std::string ToString() const;
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

// Parses "host:port" or "[v6]:port"; the port is required and may not be 0.
Result<Endpoint> ParseEndpoint(std::string_view text);

// The header in which trusted proxies name the client.
enum class ForwardingHeader {
  kXForwardedFor,  // X-Forwarded-For: client, proxy1, proxy2
  kForwarded,      // Forwarded: for=client, for=proxy1 (RFC 7239)
};

// An IPv4 or IPv6 network: "10.0.0.0/8", "2001:db8::/32", or one address.
class Network {
 public:
  static Result<Network> Parse(std::string_view text);

  // Whether `address` is in the network. An IPv4-mapped IPv6 address counts as its IPv4 self.
  bool Contains(const boost::asio::ip::address& address) const;

 private:
  boost::asio::ip::address base_;
  unsigned prefix_ = 0;
};

}  // namespace sluice::config
