#include "http/client_address.h"

#include <algorithm>
#include <optional>

namespace sluice::http {
namespace {

namespace ip = boost::asio::ip;

// Hostile headers can be long; no real chain of trusted proxies is.
constexpr size_t kMaxHops = 32;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char separator) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    size_t end = s.find(separator, start);
    parts.push_back(Trim(s.substr(start, end - start)));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

ip::address Unmapped(const ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) return ip::make_address_v4(ip::v4_mapped, a.to_v6());
  return a;
}

// "1.2.3.4", "1.2.3.4:80", "2001:db8::1", "[2001:db8::1]", "[2001:db8::1]:80".
std::optional<ip::address> ParseHop(std::string_view text) {
  if (text.starts_with('[')) {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    text = text.substr(1, close - 1);
  } else if (std::count(text.begin(), text.end(), ':') == 1) {
    text = text.substr(0, text.find(':'));  // IPv4 with a port
  }
  boost::system::error_code ec;
  ip::address address = ip::make_address(std::string(text), ec);
  if (ec) return std::nullopt;
  return Unmapped(address);
}

// The for= values of a Forwarded header, in order; an element without one counts as junk.
std::vector<std::string> ForwardedFor(std::string_view header) {
  std::vector<std::string> hops;
  for (std::string_view element : Split(header, ',')) {
    std::string hop;
    for (std::string_view pair : Split(element, ';')) {
      size_t eq = pair.find('=');
      if (eq == std::string_view::npos) continue;
      std::string key(Trim(pair.substr(0, eq)));
      std::transform(key.begin(), key.end(), key.begin(), ::tolower);
      if (key != "for") continue;
      std::string_view value = Trim(pair.substr(eq + 1));
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
        value = value.substr(1, value.size() - 2);
      }
      hop = std::string(value);
    }
    hops.push_back(std::move(hop));
  }
  return hops;
}

bool Trusted(const ip::address& a, const std::vector<config::Network>& trusted) {
  return std::any_of(trusted.begin(), trusted.end(),
                     [&](const config::Network& n) { return n.Contains(a); });
}

}  // namespace

Peer::Peer(const ip::address& address)
    : address(Unmapped(address)), text(this->address.to_string()) {}

std::string ClientAddress(const Peer& peer, std::string_view forwarding,
                          config::ForwardingHeader header,
                          const std::vector<config::Network>& trusted_proxies) {
  if (!Trusted(peer.address, trusted_proxies) || Trim(forwarding).empty()) return peer.text;
  ip::address client = peer.address;
  std::vector<std::string> hops;
  if (header == config::ForwardingHeader::kForwarded) {
    hops = ForwardedFor(forwarding);
  } else {
    for (std::string_view hop : Split(forwarding, ',')) hops.emplace_back(hop);
  }
  size_t walked = 0;
  for (auto it = hops.rbegin(); it != hops.rend() && walked++ < kMaxHops; ++it) {
    std::optional<ip::address> hop = ParseHop(*it);
    if (!hop) break;
    client = *hop;
    if (!Trusted(client, trusted_proxies)) break;
  }
  return client.to_string();
}

}  // namespace sluice::http
