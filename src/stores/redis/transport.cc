#include "transport.h"

namespace sluice::redis {

std::string NodeAddress::ToString() const {
  if (!unix_path.empty()) return "unix:" + unix_path;
  const bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::shared_ptr<Transport> MakeTransport(boost::asio::io_context& io, const NodeAddress& address,
                                         std::shared_ptr<const TlsContext> tls) {
  if (!address.unix_path.empty()) return MakeUnixTransport(io, address);
  if (tls) return MakeTlsTransport(io, address, std::move(tls));
  return MakeTcpTransport(io, address);
}

}  // namespace sluice::redis
