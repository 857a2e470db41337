// The byte stream under a Redis connection: TCP, TLS over TCP, or a Unix socket.
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace sluice {
class TlsContext;
}

namespace sluice::redis {

// Where one connection goes.
struct NodeAddress {
  std::string host;
  uint16_t port = 0;
  std::string unix_path;  // set: a Unix socket; host and port are unused
  // With TLS: the name the server's certificate must carry, sent as SNI unless it is an IP
  // address. Empty: `host`.
  std::string tls_name;

  // "host:port", "[::1]:port" or "unix:/path", for messages.
  std::string ToString() const;

  bool operator==(const NodeAddress&) const = default;
};

// A connected byte stream. One read and one write may be outstanding at once; handlers run on the
// io_context. Made by MakeTransport and held by shared_ptr: each operation keeps the transport
// alive until its handler has run, so that Close (which makes outstanding operations end with an
// error) may be followed at once by dropping it.
class Transport {
 public:
  using Handler = std::function<void(const boost::system::error_code&, size_t)>;
  // An error for people ("certificate verify failed: hostname mismatch"), empty when connected.
  using ConnectHandler = std::function<void(const std::string& error)>;

  virtual ~Transport() = default;

  // Resolves, connects and, for TLS, handshakes and verifies the server. Called once.
  virtual void Connect(ConnectHandler done) = 0;
  // Writes all of `data`, which must stay valid until `done` runs.
  virtual void Write(boost::asio::const_buffer data, Handler done) = 0;
  virtual void ReadSome(boost::asio::mutable_buffer into, Handler done) = 0;
  virtual void Close() = 0;
};

// A transport to `address` on `io`: a Unix socket when the address has a path, TLS over TCP
// when `tls` is given, else TCP.
std::shared_ptr<Transport> MakeTransport(boost::asio::io_context& io, const NodeAddress& address,
                                         std::shared_ptr<const TlsContext> tls);

// The transports, one file each.
std::shared_ptr<Transport> MakeTcpTransport(boost::asio::io_context& io,
                                            const NodeAddress& address);
std::shared_ptr<Transport> MakeTlsTransport(boost::asio::io_context& io, const NodeAddress& address,
                                            std::shared_ptr<const TlsContext> tls);
std::shared_ptr<Transport> MakeUnixTransport(boost::asio::io_context& io,
                                             const NodeAddress& address);

}  // namespace sluice::redis
