// Says in the log that a bound on what the process holds was reached (the memory store's or the
// local counts' max_buckets), at most once per interval per bound, with how many times since
// its last line: a flood of distinct clients, or a bound too low for the real ones.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/clock_timer.h"

namespace sluice::cli {

// Reads counters that the stores keep (they log nothing themselves, and a line per event would
// be a line per request under a flood) once a second. Runs on one io_context's thread.
class BoundsLog {
 public:
  struct Counter {
    // Counts up; may start again from 0 (a reload's new local counts).
    std::function<uint64_t()> read;
    // The warning, with "{}" where the count since its last line goes.
    std::string message;
  };

  // `clock` (the process's steady clock when null) times the looks and the interval.
  BoundsLog(boost::asio::io_context& io, std::chrono::seconds interval,
            std::vector<Counter> counters, std::shared_ptr<const Clock> clock = nullptr);

  // Looks now, then every second until Stop.
  void Start();
  void Stop();

 private:
  struct Watched {
    Counter counter;
    uint64_t seen = 0;  // its value at its last line
    uint64_t last = 0;  // its value at the last look
    Clock::TimePoint logged{};
  };

  void Look();

  ClockTimer timer_;
  const std::chrono::seconds interval_;
  std::vector<Watched> watched_;
  bool stopped_ = false;
};

}  // namespace sluice::cli
