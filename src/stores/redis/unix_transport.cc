#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/write.hpp>

#include "stream_transport.h"

namespace sluice::redis {
namespace {

namespace asio = boost::asio;
using unix_socket = asio::local::stream_protocol;

class UnixTransport final : public StreamTransport<UnixTransport> {
 public:
  UnixTransport(asio::io_context& io, NodeAddress address)
      : address_(std::move(address)), socket_(io) {}

  void Connect(ConnectHandler done) override {
    socket_.async_connect(
        unix_socket::endpoint(address_.unix_path),
        [self = shared_from_this(), done = std::move(done)](const boost::system::error_code& ec) {
          done(ec ? ec.message() : "");
        });
  }

  auto& stream() { return socket_; }

  void Close() override {
    boost::system::error_code ignored;
    socket_.close(ignored);
  }

 private:
  NodeAddress address_;
  unix_socket::socket socket_;
};

}  // namespace

std::shared_ptr<Transport> MakeUnixTransport(asio::io_context& io, const NodeAddress& address) {
  return std::make_shared<UnixTransport>(io, address);
}

}  // namespace sluice::redis
