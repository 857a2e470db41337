// An Asio timer over an injected sluice::Clock. Asio's own timers read a clock type's static
// now(), which a test cannot move for one component alone; this one reads the Clock it is given,
// and sleeps in real time only as long as that Clock's RealWait says (all of the wait on the
// steady clock, a millisecond at a time on a test's), so that a test that moves its clock sees
// the timers over it fire without waiting for them.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>

#include "sluice/clock.h"

namespace sluice {

// Like boost::asio::basic_waitable_timer, as far as Sluice uses one: one wait at a time;
// expires_at, expires_after, cancel and the destructor end the pending wait with
// operation_aborted; a wait always completes through the executor, never inline. Not
// thread-safe: used on its executor's thread, like Asio's timers.
template <class Executor = boost::asio::any_io_executor>
class BasicClockTimer {
 public:
  using executor_type = Executor;

  // A timer that expires at once, over `clock` (which it keeps alive).
  BasicClockTimer(const Executor& executor, std::shared_ptr<const Clock> clock)
      : state_(std::make_shared<State>(executor, std::move(clock))) {}
  template <class Context,
            class = std::enable_if_t<std::is_convertible_v<Context&, boost::asio::io_context&>>>
  BasicClockTimer(Context& context, std::shared_ptr<const Clock> clock)
      : BasicClockTimer(context.get_executor(), std::move(clock)) {}

  // A destructor must not throw, and cancelling a timer reports no error in practice.
  ~BasicClockTimer() {
    try {
      Abort();
    } catch (...) {
    }
  }
  BasicClockTimer(const BasicClockTimer&) = delete;
  BasicClockTimer& operator=(const BasicClockTimer&) = delete;

  executor_type get_executor() { return state_->real.get_executor(); }
  const Clock& clock() const { return *state_->clock; }
  Clock::TimePoint expiry() const { return state_->expiry; }

  // Sets the expiry, ending a pending wait with operation_aborted.
  void expires_at(Clock::TimePoint expiry) {
    Abort();
    state_->expiry = expiry;
  }
  void expires_after(Clock::Duration delay) { expires_at(state_->clock->Now() + delay); }

  // Ends a pending wait with operation_aborted.
  void cancel() { Abort(); }

  // Waits until the clock reads the expiry or later; completes with the error code.
  template <class Token>
  auto async_wait(Token&& token) {
    return boost::asio::async_compose<Token, void(boost::system::error_code)>(
        Wait{state_, state_->generation}, token, state_->real);
  }

 private:
  struct State {
    State(const Executor& executor, std::shared_ptr<const Clock> c)
        : real(executor), clock(ClockOrSteady(std::move(c))) {}
    boost::asio::basic_waitable_timer<std::chrono::steady_clock,
                                      boost::asio::wait_traits<std::chrono::steady_clock>, Executor>
        real;
    std::shared_ptr<const Clock> clock;
    Clock::TimePoint expiry = clock->Now();
    uint64_t generation = 0;  // moved by every abort: a wait of an earlier one has ended
  };

  // One wait: the real timer for RealWait of what remains, again until the clock has passed the
  // expiry. The first step always sleeps, even past the expiry, so that completion is never
  // inline.
  struct Wait {
    std::shared_ptr<State> state;
    uint64_t generation;
    bool started = false;

    template <class Self>
    void operator()(Self& self, boost::system::error_code ec = {}) {
      State& s = *state;
      if (ec == boost::asio::error::operation_aborted || generation != s.generation) {
        return self.complete(boost::asio::error::operation_aborted);
      }
      const Clock::Duration remaining = s.expiry - s.clock->Now();
      if (started && remaining <= Clock::Duration::zero()) return self.complete({});
      started = true;
      s.real.expires_after(remaining <= Clock::Duration::zero() ? Clock::Duration::zero()
                                                                : s.clock->RealWait(remaining));
      s.real.async_wait(std::move(self));
    }
  };

  void Abort() {
    ++state_->generation;
    state_->real.cancel();
  }

  std::shared_ptr<State> state_;
};

using ClockTimer = BasicClockTimer<>;

}  // namespace sluice
