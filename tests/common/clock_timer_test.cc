#include "common/clock_timer.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <memory>
#include <optional>

#include "support/manual_clock.h"

namespace sluice {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;

class ClockTimerTest : public ::testing::Test {
 protected:
  // Starts a wait; its outcome lands in the returned slot once the loop runs it.
  std::shared_ptr<std::optional<boost::system::error_code>> Wait(ClockTimer& timer) {
    auto outcome = std::make_shared<std::optional<boost::system::error_code>>();
    timer.async_wait([outcome](boost::system::error_code ec) { *outcome = ec; });
    return outcome;
  }

  // Runs the loop for a few real milliseconds: long enough for a timer over the manual clock to
  // see a move, far shorter than any wait the tests set.
  void Turn() {
    io_.restart();
    io_.run_for(milliseconds(20));
  }

  asio::io_context io_;
  std::shared_ptr<testing::ManualClock> clock_ = std::make_shared<testing::ManualClock>(0);
};

TEST_F(ClockTimerTest, FiresOnlyOnceTheClockReachesTheExpiry) {
  ClockTimer timer(io_, clock_);
  timer.expires_after(std::chrono::hours(1));
  auto outcome = Wait(timer);
  Turn();
  EXPECT_FALSE(outcome->has_value());
  clock_->Advance(std::chrono::minutes(59));
  Turn();
  EXPECT_FALSE(outcome->has_value());
  clock_->Advance(std::chrono::minutes(1));
  Turn();
  ASSERT_TRUE(outcome->has_value());
  EXPECT_FALSE(**outcome);
}

TEST_F(ClockTimerTest, AnExpiryPassedCompletesThroughTheLoopNotInline) {
  ClockTimer timer(io_, clock_);
  timer.expires_at(clock_->Now() - milliseconds(5));
  auto outcome = Wait(timer);
  EXPECT_FALSE(outcome->has_value());  // async_wait returned before the handler ran
  Turn();
  ASSERT_TRUE(outcome->has_value());
  EXPECT_FALSE(**outcome);
}

TEST_F(ClockTimerTest, CancelAndANewExpiryEndThePendingWait) {
  ClockTimer timer(io_, clock_);
  timer.expires_after(milliseconds(100));
  auto cancelled = Wait(timer);
  timer.cancel();
  Turn();
  ASSERT_TRUE(cancelled->has_value());
  EXPECT_EQ(**cancelled, asio::error::operation_aborted);

  auto moved = Wait(timer);
  timer.expires_after(milliseconds(300));
  auto again = Wait(timer);
  clock_->Advance(milliseconds(200));  // past the first expiry, not the second
  Turn();
  ASSERT_TRUE(moved->has_value());
  EXPECT_EQ(**moved, asio::error::operation_aborted);
  EXPECT_FALSE(again->has_value());
  clock_->Advance(milliseconds(100));
  Turn();
  ASSERT_TRUE(again->has_value());
  EXPECT_FALSE(**again);
}

TEST_F(ClockTimerTest, ATimerGoneEndsItsWaitAborted) {
  auto timer = std::make_unique<ClockTimer>(io_, clock_);
  timer->expires_after(milliseconds(100));
  auto outcome = Wait(*timer);
  timer.reset();
  clock_->Advance(milliseconds(100));
  Turn();
  ASSERT_TRUE(outcome->has_value());
  EXPECT_EQ(**outcome, asio::error::operation_aborted);
}

TEST_F(ClockTimerTest, OnTheSteadyClockItSleepsTheWholeWaitInOneGo) {
  ClockTimer timer(io_, nullptr);  // the process's steady clock
  const Clock::TimePoint start = timer.clock().Now();
  timer.expires_after(milliseconds(30));
  auto outcome = Wait(timer);
  io_.run_for(std::chrono::seconds(5));  // returns once the wait is done
  ASSERT_TRUE(outcome->has_value());
  EXPECT_FALSE(**outcome);
  EXPECT_GE(timer.clock().Now() - start, milliseconds(30));
}

TEST_F(ClockTimerTest, WorksAsAnAwaitable) {
  ClockTimer timer(io_, clock_);
  timer.expires_after(milliseconds(50));
  bool done = false;
  asio::co_spawn(
      io_,
      [&]() -> asio::awaitable<void> {
        co_await timer.async_wait(asio::use_awaitable);
        done = true;
      },
      asio::detached);
  Turn();
  EXPECT_FALSE(done);
  clock_->Advance(milliseconds(50));
  Turn();
  EXPECT_TRUE(done);
}

}  // namespace
}  // namespace sluice
