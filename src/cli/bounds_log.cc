#include "bounds_log.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <utility>

namespace sluice::cli {

BoundsLog::BoundsLog(boost::asio::io_context& io, std::chrono::seconds interval,
                     std::vector<Counter> counters, std::shared_ptr<const Clock> clock)
    : timer_(io, std::move(clock)), interval_(interval) {
  for (Counter& c : counters) watched_.push_back({std::move(c)});
}

void BoundsLog::Start() { Look(); }

void BoundsLog::Stop() {
  stopped_ = true;
  timer_.cancel();
}

void BoundsLog::Look() {
  if (stopped_) return;
  const Clock::TimePoint now = timer_.clock().Now();
  for (Watched& w : watched_) {
    const uint64_t value = w.counter.read();
    if (value < w.last) w.seen = 0;  // counting again from 0
    w.last = value;
    if (value > w.seen && now - w.logged >= interval_) {
      spdlog::warn(fmt::runtime(w.counter.message), value - w.seen);
      w.seen = value;
      w.logged = now;
    }
  }
  timer_.expires_after(std::chrono::seconds(1));
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) Look();
  });
}

}  // namespace sluice::cli
