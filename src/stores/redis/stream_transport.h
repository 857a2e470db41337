// What the transports share: reads and writes on an Asio stream, each holding the transport.
#pragma once

#include <boost/asio/write.hpp>
#include <memory>

#include "transport.h"

namespace sluice::redis {

// A Transport whose stream is `Derived::stream()`: its reads and writes keep the transport alive
// until their handlers have run.
template <typename Derived>
class StreamTransport : public Transport, public std::enable_shared_from_this<Derived> {
 public:
  void Write(boost::asio::const_buffer data, Handler done) final {
    boost::asio::async_write(Self().stream(), data,
                             [self = this->shared_from_this(), done = std::move(done)](
                                 const boost::system::error_code& ec, size_t n) { done(ec, n); });
  }

  void ReadSome(boost::asio::mutable_buffer into, Handler done) final {
    Self().stream().async_read_some(
        into, [self = this->shared_from_this(), done = std::move(done)](
                  const boost::system::error_code& ec, size_t n) { done(ec, n); });
  }

 private:
  Derived& Self() { return static_cast<Derived&>(*this); }
};

}  // namespace sluice::redis
