#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>

#include "stream_transport.h"
#include "tls_context.h"

namespace sluice::redis {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

class TlsTransport final : public StreamTransport<TlsTransport> {
 public:
  TlsTransport(asio::io_context& io, NodeAddress address, std::shared_ptr<const TlsContext> tls)
      : address_(std::move(address)),
        tls_(std::move(tls)),
        resolver_(io),
        stream_(io, tls_->native()) {}

  void Connect(ConnectHandler done) override {
    if (std::string error = PrepareVerification(); !error.empty()) return done(error);
    resolver_.async_resolve(
        address_.host, std::to_string(address_.port),
        [self = shared_from_this(), done = std::move(done)](
            const boost::system::error_code& ec, const tcp::resolver::results_type& hosts) {
          if (ec) return done("cannot resolve " + self->address_.host + ": " + ec.message());
          asio::async_connect(self->stream_.lowest_layer(), hosts,
                              [self, done](const boost::system::error_code& ec, const auto&) {
                                if (ec) return done(ec.message());
                                boost::system::error_code ignored;
                                self->stream_.lowest_layer().set_option(tcp::no_delay(true),
                                                                        ignored);
                                self->Handshake(done);
                              });
        });
  }

  auto& stream() { return stream_; }

  void Close() override {
    resolver_.cancel();
    boost::system::error_code ignored;
    stream_.lowest_layer().close(ignored);
  }

 private:
  // SNI, and the name (or address) the certificate must carry.
  std::string PrepareVerification() {
    const std::string& name = address_.tls_name.empty() ? address_.host : address_.tls_name;
    SSL* ssl = stream_.native_handle();
    const bool ip = IsIpAddress(name);
    if (!ip && SSL_set_tlsext_host_name(ssl, name.c_str()) != 1) {
      return "TLS: cannot send the server name " + name;
    }
    if (!tls_->options().verify) return "";
    const int set = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str())
                       : SSL_set1_host(ssl, name.c_str());
    return set == 1 ? "" : "TLS: cannot verify the name " + name;
  }

  void Handshake(const ConnectHandler& done) {
    stream_.async_handshake(ssl::stream_base::client, [self = shared_from_this(),
                                                       done](const boost::system::error_code& ec) {
      if (!ec) return done("");
      const long verified = SSL_get_verify_result(self->stream_.native_handle());
      if (verified != X509_V_OK) {
        return done(std::string("TLS: the server's certificate is refused: ") +
                    X509_verify_cert_error_string(verified));
      }
      done("TLS handshake failed: " + ec.message());
    });
  }

  NodeAddress address_;
  std::shared_ptr<const TlsContext> tls_;  // outlives the stream, which refers to its context
  tcp::resolver resolver_;
  ssl::stream<tcp::socket> stream_;
};

}  // namespace

std::shared_ptr<Transport> MakeTlsTransport(asio::io_context& io, const NodeAddress& address,
                                            std::shared_ptr<const TlsContext> tls) {
  return std::make_shared<TlsTransport>(io, address, std::move(tls));
}

}  // namespace sluice::redis
