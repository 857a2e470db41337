#include "http/deadline.h"

#include <gtest/gtest.h>

#include <optional>

namespace sluice::http {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Socket = asio::basic_stream_socket<tcp, asio::io_context::executor_type>;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A connected pair of loopback sockets on `io`.
struct SocketPair {
  explicit SocketPair(asio::io_context& io) : ours(io), theirs(io) {
    asio::basic_socket_acceptor<tcp, asio::io_context::executor_type> acceptor(
        io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    ours.connect(acceptor.local_endpoint());
    acceptor.accept(theirs);
  }
  Socket ours;
  Socket theirs;
};

// A socket whose peer never writes, and its deadline.
class SocketDeadlineTest : public testing::Test {
 protected:
  // Moves the deadline, noting when: the socket may close no sooner than `timeout` after.
  void ExpiresAfter(Clock::duration timeout) {
    moved_at_ = Clock::now();
    deadline_.ExpiresAfter(timeout);
  }

  // Starts a read that nothing will answer, and runs the loop for `time` at most; how long after
  // the deadline's last move the read ended, if it did.
  std::optional<Clock::duration> ReadFor(Clock::duration time) {
    static char byte;
    std::optional<Clock::duration> ended;
    pair_.ours.async_read_some(asio::buffer(&byte, 1),
                               [this, &ended](const boost::system::error_code&, size_t) {
                                 ended = Clock::now() - moved_at_;
                               });
    io_.run_for(time);
    return ended;
  }

  asio::io_context io_;
  SocketPair pair_{io_};
  SocketDeadline<Socket> deadline_{pair_.ours};
  Clock::time_point moved_at_;
};

TEST_F(SocketDeadlineTest, ClosesTheSocketWhenItPassesAndEndsThePendingRead) {
  ExpiresAfter(milliseconds(50));
  std::optional<Clock::duration> read = ReadFor(milliseconds(2000));
  ASSERT_TRUE(read.has_value());
  EXPECT_GE(*read, milliseconds(50));
  EXPECT_TRUE(deadline_.expired());
  EXPECT_FALSE(pair_.ours.is_open());
}

TEST_F(SocketDeadlineTest, ALaterDeadlineCountsFromItsLastMove) {
  ExpiresAfter(milliseconds(30));
  ExpiresAfter(milliseconds(250));  // the timer set for 30 ms sets itself again
  std::optional<Clock::duration> read = ReadFor(milliseconds(2000));
  ASSERT_TRUE(read.has_value());
  EXPECT_GE(*read, milliseconds(250));
  EXPECT_TRUE(deadline_.expired());
}

TEST_F(SocketDeadlineTest, AnEarlierDeadlineSetsTheTimerAgain) {
  ExpiresAfter(std::chrono::hours(1));
  ExpiresAfter(milliseconds(30));
  std::optional<Clock::duration> read = ReadFor(milliseconds(2000));
  ASSERT_TRUE(read.has_value());
  EXPECT_TRUE(deadline_.expired());
}

TEST_F(SocketDeadlineTest, NoDeadlineLeavesTheSocketOpen) {
  ExpiresAfter(milliseconds(30));
  deadline_.ExpiresNever();
  EXPECT_FALSE(ReadFor(milliseconds(200)).has_value());
  EXPECT_FALSE(deadline_.expired());
  EXPECT_TRUE(pair_.ours.is_open());
}

TEST(SocketDeadlineLifetimeTest, ADeadlineGoneBeforeItsTimeTouchesNothing) {
  asio::io_context io;
  SocketPair pair(io);
  {
    SocketDeadline deadline(pair.ours);
    deadline.ExpiresAfter(milliseconds(30));
  }
  io.run_for(milliseconds(150));
  EXPECT_TRUE(pair.ours.is_open());
  // A socket that goes right after its deadline leaves nothing behind for the timer.
  auto socket = std::make_unique<Socket>(io);
  auto deadline = std::make_unique<SocketDeadline<Socket>>(*socket);
  deadline->ExpiresAfter(milliseconds(30));
  deadline.reset();
  socket.reset();
  io.restart();
  io.run_for(milliseconds(100));
}

}  // namespace
}  // namespace sluice::http
