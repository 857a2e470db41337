#include "http/event_loops.h"

namespace sluice::http {

EventLoops::EventLoops(size_t count) {
  for (size_t i = 0; i < std::max<size_t>(count, 1); ++i)
    loops_.push_back(std::make_unique<Loop>());
}

EventLoops::~EventLoops() {
  Stop();
  Join();
  for (auto& loop : loops_) loop->io.shutdown();
}

void EventLoops::Start() {
  for (auto& loop : loops_) {
    loop->thread = std::thread([&io = loop->io] { io.run(); });
  }
}

void EventLoops::Stop() {
  for (auto& loop : loops_) loop->io.stop();
}

void EventLoops::Join() {
  for (auto& loop : loops_) {
    if (loop->thread.joinable()) loop->thread.join();
  }
}

}  // namespace sluice::http
