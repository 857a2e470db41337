#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include "stream_transport.h"

namespace sluice::redis {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

class TcpTransport final : public StreamTransport<TcpTransport> {
 public:
  TcpTransport(asio::io_context& io, NodeAddress address)
      : address_(std::move(address)), resolver_(io), socket_(io) {}

  void Connect(ConnectHandler done) override {
    resolver_.async_resolve(
        address_.host, std::to_string(address_.port),
        [self = shared_from_this(), done = std::move(done)](
            const boost::system::error_code& ec, const tcp::resolver::results_type& hosts) {
          if (ec) return done("cannot resolve " + self->address_.host + ": " + ec.message());
          asio::async_connect(self->socket_, hosts,
                              [self, done](const boost::system::error_code& ec, const auto&) {
                                if (ec) return done(ec.message());
                                // Without NODELAY pipelining still works, only slower.
                                boost::system::error_code ignored;
                                self->socket_.set_option(tcp::no_delay(true), ignored);
                                done("");
                              });
        });
  }

  auto& stream() { return socket_; }

  void Close() override {
    resolver_.cancel();
    boost::system::error_code ignored;
    socket_.close(ignored);
  }

 private:
  NodeAddress address_;
  tcp::resolver resolver_;
  tcp::socket socket_;
};

}  // namespace

std::shared_ptr<Transport> MakeTcpTransport(asio::io_context& io, const NodeAddress& address) {
  return std::make_shared<TcpTransport>(io, address);
}

}  // namespace sluice::redis
