// The gateway's threads: one event loop (an io_context) per thread, as nginx and Envoy run their
// workers. A connection lives on one loop for its whole life, with its own loop's upstream pool
// and store connection, so a request never changes threads and nothing it touches needs a lock
// or a strand.
#pragma once

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <memory>
#include <thread>
#include <vector>

namespace sluice::http {

class EventLoops {
 public:
  // `count` loops (at least one), not yet running.
  explicit EventLoops(size_t count);
  // Stops and joins the threads, then destroys every loop's pending handlers before any loop's
  // services: a handler on one loop may hold the last reference to an object whose I/O is on
  // another (a session holds its server, whose acceptor is on the first loop).
  ~EventLoops();

  EventLoops(const EventLoops&) = delete;
  EventLoops& operator=(const EventLoops&) = delete;

  size_t size() const { return loops_.size(); }
  boost::asio::io_context& operator[](size_t index) { return loops_[index]->io; }

  // The loop for the next new connection: round robin.
  size_t Next() { return next_.fetch_add(1, std::memory_order_relaxed) % loops_.size(); }

  // Starts a thread per loop. The loops run until Stop, even with nothing to do.
  void Start();

  // Makes every loop return at once, abandoning what is pending; callable from any thread.
  void Stop();

  // Waits for the threads to end; not callable from a loop's own thread.
  void Join();

 private:
  // An io_context whose handlers can be destroyed (shutdown) before it is.
  class Context : public boost::asio::io_context {
   public:
    using execution_context::shutdown;
    using io_context::io_context;
  };

  struct Loop {
    Context io{1};  // run by one thread (others still post to it)
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{
        io.get_executor()};
    std::thread thread;
  };
  std::vector<std::unique_ptr<Loop>> loops_;
  std::atomic<size_t> next_{0};
};

}  // namespace sluice::http
