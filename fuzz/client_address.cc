// X-Forwarded-For and Forwarded (ClientAddress): headers any client can send, read when the
// peer is a trusted proxy. The first byte chooses the header and whether the peer is trusted
// (IPv4 or IPv6), the rest is the header's value.
#include <boost/asio/ip/address.hpp>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "config/network.h"
#include "http/client_address.h"

namespace {

std::vector<sluice::config::Network> TrustedProxies() {
  std::vector<sluice::config::Network> networks;
  for (const char* cidr : {"10.0.0.0/8", "127.0.0.1/32", "::1/128", "fd00::/8"}) {
    networks.push_back(sluice::config::Network::Parse(cidr).value());
  }
  return networks;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const std::vector<sluice::config::Network> trusted = TrustedProxies();
  static const char* const kPeers[] = {"10.1.2.3", "192.0.2.1", "::1", "2001:db8::1"};
  const uint8_t choice = data[0];
  const sluice::http::Peer peer(boost::asio::ip::make_address(kPeers[choice & 3]));
  const auto header = (choice & 4) != 0 ? sluice::config::ForwardingHeader::kForwarded
                                        : sluice::config::ForwardingHeader::kXForwardedFor;
  const std::string_view value(reinterpret_cast<const char*>(data + 1), size - 1);
  (void)sluice::http::ClientAddress(peer, value, header, trusted);
  return 0;
}
