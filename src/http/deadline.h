// A deadline for the operations on one socket, as Beast's basic_stream keeps one, for less work
// a request: moving the deadline stores a time, and one timer, woken only when the deadline may
// have come, closes the socket once it has. basic_stream instead starts a timer and cancels it
// around every read and every write.
#pragma once

#include <boost/asio.hpp>
#include <memory>

#include "common/clock_timer.h"
#include "sluice/clock.h"

namespace sluice::http {

// Not thread-safe: used on the socket's event loop only, like the socket.
template <class Socket>
class SocketDeadline {
 public:
  // `socket` must outlive this object; `clock` (the process's steady clock when null) tells the
  // time.
  explicit SocketDeadline(Socket& socket, std::shared_ptr<const Clock> clock = nullptr)
      : state_(std::make_shared<State>(socket, std::move(clock))) {}
  ~SocketDeadline() {
    state_->socket = nullptr;
    // Frees the timer's state now rather than at its expiry; cancelling reports no error in
    // practice, and a destructor must not throw whatever it says.
    try {
      state_->timer.cancel();
    } catch (...) {
    }
  }
  SocketDeadline(const SocketDeadline&) = delete;
  SocketDeadline& operator=(const SocketDeadline&) = delete;

  // Closes the socket `timeout` from now, unless moved before then; whatever operation is pending
  // then fails.
  void ExpiresAfter(Clock::Duration timeout) {
    State& s = *state_;
    s.deadline = s.timer.clock().Now() + timeout;
    // A later deadline waits for the timer already set, which then sets itself again.
    if (s.deadline < s.armed) Arm(state_);
  }

  void ExpiresNever() { state_->deadline = Clock::TimePoint::max(); }

  // Whether the deadline closed the socket.
  bool expired() const { return state_->expired; }

 private:
  struct State {
    State(Socket& s, std::shared_ptr<const Clock> clock)
        : socket(&s), timer(s.get_executor(), std::move(clock)) {}
    Socket* socket;
    BasicClockTimer<typename Socket::executor_type> timer;
    Clock::TimePoint deadline = Clock::TimePoint::max();
    Clock::TimePoint armed = Clock::TimePoint::max();  // when the timer wakes; max: it won't
    uint64_t generation = 0;  // of the latest wait: an earlier one woken late is ignored
    bool expired = false;
  };

  static void Arm(const std::shared_ptr<State>& state) {
    State& s = *state;
    s.armed = s.deadline;
    const uint64_t generation = ++s.generation;
    s.timer.expires_at(s.deadline);
    s.timer.async_wait([state, generation](const boost::system::error_code& /*ec*/) {
      State& s = *state;
      if (generation != s.generation || s.socket == nullptr) return;
      s.armed = Clock::TimePoint::max();
      if (s.deadline == Clock::TimePoint::max()) return;
      if (s.timer.clock().Now() < s.deadline) return Arm(state);
      s.expired = true;
      boost::system::error_code ignored;
      s.socket->close(ignored);
    });
  }

  std::shared_ptr<State> state_;
};

}  // namespace sluice::http
