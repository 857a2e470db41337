// Which address a request really comes from: the socket's peer, or what trusted proxies in front
// of the gateway say in X-Forwarded-For or Forwarded (RFC 7239).
#pragma once

#include <boost/asio/ip/address.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "config/network.h"

namespace sluice::http {

// A connection's direct peer: its address (an IPv4-mapped IPv6 address as IPv4) and that
// address as text, made once for all the connection's requests.
struct Peer {
  explicit Peer(const boost::asio::ip::address& address);
  boost::asio::ip::address address;
  std::string text;
};

// The client's address, as text ("203.0.113.42", "2001:db8::1"). The forwarding header
// (`forwarding`, in the syntax of `header`; several lines joined with ",") is read only when
// `peer` is a trusted proxy, and then from the right (the hop nearest the gateway): each
// address that is itself a trusted proxy is skipped, and the first that is not is the client.
// An entry that is not an address ("unknown", junk) ends the walk at the hop that wrote it.
// Only the header the trusted proxies write may be read: any other the client could forge.
// An IPv4-mapped IPv6 address is given as IPv4.
std::string ClientAddress(const Peer& peer, std::string_view forwarding,
                          config::ForwardingHeader header,
                          const std::vector<config::Network>& trusted_proxies);

}  // namespace sluice::http
