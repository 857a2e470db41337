#include "http/event_loops.h"

#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <memory>

namespace sluice::http {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Acceptor = asio::basic_socket_acceptor<tcp, asio::io_context::executor_type>;

// A handler never run on one loop owns, last, a listening socket of another loop; whichever loop
// the socket is on, the loops go without the socket touching a service already destroyed (the
// sanitizer build reports it: a use after free, as when a gateway stopped with a session still
// open on its second loop).
TEST(EventLoopsTest, AHandlerLeftOnOneLoopMayOwnTheSocketOfAnother) {
  for (size_t socket_loop : {0, 1}) {
    auto loops = std::make_unique<EventLoops>(2);
    auto acceptor = std::make_shared<Acceptor>(
        (*loops)[socket_loop], tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    const std::weak_ptr<Acceptor> watch = acceptor;
    asio::post((*loops)[1 - socket_loop], [acceptor] {});
    acceptor.reset();
    ASSERT_FALSE(watch.expired()) << "the handler holds it";
    loops.reset();
    EXPECT_TRUE(watch.expired()) << "the handler went with the loops";
  }
}

}  // namespace
}  // namespace sluice::http
