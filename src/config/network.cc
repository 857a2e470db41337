#include "config/network.h"

#include <array>
#include <charconv>

namespace sluice::config {
namespace asio = boost::asio;

std::string Endpoint::ToString() const {
  return host.find(':') == std::string::npos ? host + ":" + std::to_string(port)
                                             : "[" + host + "]:" + std::to_string(port);
}

Result<Endpoint> ParseEndpoint(std::string_view text) {
  auto bad = [text](std::string_view why) {
    return Status::InvalidArgument("\"" + std::string(text) + "\" " + std::string(why));
  };
  Endpoint endpoint;
  std::string_view port;
  if (text.starts_with('[')) {
    size_t close = text.find("]:");
    if (close == std::string_view::npos) return bad("is not [address]:port");
    endpoint.host = std::string(text.substr(1, close - 1));
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad("has no port (host:port)");
    endpoint.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
  }
  if (endpoint.host.empty()) return bad("has no host");
  auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), endpoint.port);
  if (error != std::errc() || end != port.data() + port.size() || endpoint.port == 0) {
    return bad("has no valid port (1 to 65535)");
  }
  return endpoint;
}

namespace {

// IPv4 as its IPv6-mapped form, so one comparison covers both families.
std::array<unsigned char, 16> AsV6Bytes(const asio::ip::address& a) {
  if (a.is_v4()) return asio::ip::make_address_v6(asio::ip::v4_mapped, a.to_v4()).to_bytes();
  return a.to_v6().to_bytes();
}

}  // namespace

Result<Network> Network::Parse(std::string_view text) {
  const size_t slash = text.find('/');
  boost::system::error_code ec;
  Network network;
  network.base_ = asio::ip::make_address(std::string(text.substr(0, slash)), ec);
  if (ec) return Status::InvalidArgument("\"" + std::string(text) + "\" is not an IP network");
  const unsigned bits = network.base_.is_v4() ? 32 : 128;
  network.prefix_ = bits;
  if (slash != std::string_view::npos) {
    std::string_view prefix = text.substr(slash + 1);
    auto [end, error] =
        std::from_chars(prefix.data(), prefix.data() + prefix.size(), network.prefix_);
    if (error != std::errc() || end != prefix.data() + prefix.size() || network.prefix_ > bits) {
      return Status::InvalidArgument("\"" + std::string(text) + "\" has a bad prefix length");
    }
  }
  if (network.base_.is_v4()) network.prefix_ += 96;  // compared as IPv4-mapped IPv6
  return network;
}

bool Network::Contains(const asio::ip::address& address) const {
  const auto want = AsV6Bytes(base_);
  const auto have = AsV6Bytes(address);
  unsigned bits = prefix_;
  for (size_t i = 0; i < want.size() && bits > 0; ++i, bits = bits >= 8 ? bits - 8 : 0) {
    const unsigned mask = bits >= 8 ? 0xFFU : (0xFFU << (8 - bits)) & 0xFFU;
    if ((want[i] & mask) != (have[i] & mask)) return false;
  }
  return true;
}

}  // namespace sluice::config
