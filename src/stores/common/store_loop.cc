#include "store_loop.h"

namespace sluice::stores {

StoreLoop::StoreLoop(boost::asio::io_context* external)
    : own_(external != nullptr ? nullptr : std::make_unique<boost::asio::io_context>(1)),
      io_(external != nullptr ? *external : *own_) {}

void StoreLoop::Start(std::shared_ptr<void> owner) {
  if (!own_) return;
  work_.emplace(own_->get_executor());
  thread_ = std::thread([this, owner = std::move(owner)] { io_.run(); });
}

void StoreLoop::Finish() {
  if (!own_) return;
  work_.reset();
  if (std::this_thread::get_id() == thread_.get_id()) {
    thread_.detach();
  } else if (thread_.joinable()) {
    thread_.join();
  }
}

}  // namespace sluice::stores
