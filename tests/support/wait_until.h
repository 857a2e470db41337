// Waiting for another process (a server, a `sluice serve`) to reach a state: no clock is shared
// with it, so the test polls for the state it waits for, with a deadline, instead of sleeping
// for a guess.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace sluice::testing {

// Polls `condition` every few milliseconds until it holds (true) or `timeout` has passed
// (false, after one last look).
inline bool WaitUntil(const std::function<bool()>& condition,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < give_up) {
    if (condition()) return true;
    // The one sleep of every poll: another process's state changes on its own time, which no
    // test clock moves.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return condition();
}

}  // namespace sluice::testing
