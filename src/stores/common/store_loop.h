// Where a store's connections run: the caller's event loop, or an io_context and a thread of the
// store's own.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <optional>
#include <thread>

namespace sluice::stores {

class StoreLoop {
 public:
  // On `external` when given (run by the caller's thread), else on one of its own.
  explicit StoreLoop(boost::asio::io_context* external);

  StoreLoop(const StoreLoop&) = delete;
  StoreLoop& operator=(const StoreLoop&) = delete;

  boost::asio::io_context& io() { return io_; }

  // Starts the own thread, if any; it keeps `owner` alive until it ends, since the owner's
  // handlers may run until then.
  void Start(std::shared_ptr<void> owner);

  // Lets the own thread end once its work is done and waits for it; from that thread itself (a
  // callback may drop the last reference to a store) it lets the thread go instead.
  void Finish();

 private:
  std::unique_ptr<boost::asio::io_context> own_;
  boost::asio::io_context& io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::thread thread_;
};

}  // namespace sluice::stores
