#include "http/deadline.h"

#include <gtest/gtest.h>

#include <memory>

#include "support/manual_clock.h"

namespace sluice::http {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Socket = asio::basic_stream_socket<tcp, asio::io_context::executor_type>;
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

// A socket whose peer never writes, and its deadline, on a clock the test moves.
class SocketDeadlineTest : public ::testing::Test {
 protected:
  // Starts a read that nothing will answer; `ended` says whether it has ended.
  void StartRead() {
    static char byte;
    pair_.ours.async_read_some(asio::buffer(&byte, 1),
                               [this](const boost::system::error_code&, size_t) { ended_ = true; });
  }

  // Moves the clock by `delta` and lets the loop see it (the timer looks every millisecond).
  void Pass(Clock::Duration delta) {
    clock_->Advance(delta);
    io_.restart();
    io_.run_for(milliseconds(20));
  }

  asio::io_context io_;
  SocketPair pair_{io_};
  std::shared_ptr<sluice::testing::ManualClock> clock_ =
      std::make_shared<sluice::testing::ManualClock>(0);
  SocketDeadline<Socket> deadline_{pair_.ours, clock_};
  bool ended_ = false;
};

TEST_F(SocketDeadlineTest, ClosesTheSocketWhenItPassesAndEndsThePendingRead) {
  deadline_.ExpiresAfter(milliseconds(50));
  StartRead();
  Pass(milliseconds(49));
  EXPECT_FALSE(ended_);
  EXPECT_TRUE(pair_.ours.is_open());
  Pass(milliseconds(1));
  EXPECT_TRUE(ended_);
  EXPECT_TRUE(deadline_.expired());
  EXPECT_FALSE(pair_.ours.is_open());
}

TEST_F(SocketDeadlineTest, ALaterDeadlineCountsFromItsLastMove) {
  deadline_.ExpiresAfter(milliseconds(30));
  Pass(milliseconds(10));
  deadline_.ExpiresAfter(milliseconds(250));  // the timer set for 30 ms sets itself again
  StartRead();
  Pass(milliseconds(249));
  EXPECT_FALSE(ended_);
  Pass(milliseconds(1));
  EXPECT_TRUE(ended_);
  EXPECT_TRUE(deadline_.expired());
}

TEST_F(SocketDeadlineTest, AnEarlierDeadlineSetsTheTimerAgain) {
  deadline_.ExpiresAfter(std::chrono::hours(1));
  deadline_.ExpiresAfter(milliseconds(30));
  StartRead();
  Pass(milliseconds(30));
  EXPECT_TRUE(ended_);
  EXPECT_TRUE(deadline_.expired());
}

TEST_F(SocketDeadlineTest, NoDeadlineLeavesTheSocketOpen) {
  deadline_.ExpiresAfter(milliseconds(30));
  deadline_.ExpiresNever();
  StartRead();
  Pass(std::chrono::hours(24));
  EXPECT_FALSE(ended_);
  EXPECT_FALSE(deadline_.expired());
  EXPECT_TRUE(pair_.ours.is_open());
}

TEST(SocketDeadlineLifetimeTest, ADeadlineGoneBeforeItsTimeTouchesNothing) {
  asio::io_context io;
  auto clock = std::make_shared<sluice::testing::ManualClock>(0);
  SocketPair pair(io);
  {
    SocketDeadline deadline(pair.ours, clock);
    deadline.ExpiresAfter(milliseconds(30));
  }
  clock->Advance(milliseconds(100));
  io.run_for(milliseconds(20));
  EXPECT_TRUE(pair.ours.is_open());
  // A socket that goes right after its deadline leaves nothing behind for the timer.
  auto socket = std::make_unique<Socket>(io);
  auto deadline = std::make_unique<SocketDeadline<Socket>>(*socket, clock);
  deadline->ExpiresAfter(milliseconds(30));
  deadline.reset();
  socket.reset();
  clock->Advance(milliseconds(100));
  io.restart();
  io.run_for(milliseconds(20));
}

TEST(SocketDeadlineSteadyTest, OnTheSteadyClockItClosesInRealTime) {
  asio::io_context io;
  SocketPair pair(io);
  SocketDeadline<Socket> deadline(pair.ours);
  deadline.ExpiresAfter(milliseconds(20));
  io.run_for(milliseconds(2000));  // returns once the timer is done
  EXPECT_TRUE(deadline.expired());
  EXPECT_FALSE(pair.ours.is_open());
}

}  // namespace
}  // namespace sluice::http
