// Where a store's connections run: the caller's event loop, or an io_context and a thread of the
// store's own.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <optional>

namespace sluice::stores {

class StoreLoop {
 public:
  // On `external` when given (run by the caller's thread), else on one of its own.
  explicit StoreLoop(boost::asio::io_context* external);
  ~StoreLoop();

  StoreLoop(const StoreLoop&) = delete;
  StoreLoop& operator=(const StoreLoop&) = delete;

  boost::asio::io_context& io() { return io_; }

  // Starts the own thread, if any; it keeps `owner` alive until it ends, since the owner's
  // handlers may run until then.
  void Start(std::shared_ptr<void> owner);

  // Lets the own thread end once its work is done and waits for it. From that thread itself (a
  // callback may drop the last reference to a store) it cannot wait: the thread ends alone and
  // is joined later, when another store's thread starts or stops or, at the latest, as the
  // process exits. At exit, every own thread still running is stopped (its handlers not yet run
  // are dropped) and joined, so that no store's thread runs while the program's static objects
  // and its libraries are torn down: not even one whose last reference a callback is about to
  // drop as the program returns from main.
  void Finish();

  // An own thread and its io_context; shared with the process's list of them.
  struct OwnThread;

 private:
  std::shared_ptr<OwnThread> own_;
  boost::asio::io_context& io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
};

}  // namespace sluice::stores
