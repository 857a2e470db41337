// A mutex, its scoped lock and a condition variable that Clang's thread-safety analysis can
// follow (thread_annotations.h): libstdc++'s std::mutex carries no annotations, so members
// guarded by one could not be checked. Each is a thin layer over the standard type.
#pragma once
#include <atomic>
#include <cassert>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include "sluice/thread_annotations.h"

namespace sluice {

// A std::mutex that the analysis knows as a lock, and that knows which thread holds it, so that
// a function which needs it held can assert so in debug builds.
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() {
    mutex_.lock();
    holder_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  }
  void Unlock() RELEASE() {
    holder_.store(std::thread::id(), std::memory_order_relaxed);
    mutex_.unlock();
  }
  // Fails (in debug builds) unless the calling thread holds the mutex; after it the analysis
  // takes the mutex as held, where it cannot see that itself (a callback run under the lock).
  void AssertHeld() const ASSERT_CAPABILITY(this) {
    assert(holder_.load(std::memory_order_relaxed) == std::this_thread::get_id());
  }

 private:
  friend class CondVar;
  std::mutex mutex_;
  // Only the holder writes its own id here, so a relaxed read by that thread sees it.
  std::atomic<std::thread::id> holder_{};
};

// Holds a Mutex for its scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mutex) ACQUIRE(mutex) : mutex_(mutex) { mutex_->Lock(); }
  ~MutexLock() RELEASE() { mutex_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mutex_;
};

// A condition variable over one Mutex, waited on with that mutex held (it is released during
// the wait and held again on return). The waits assert the mutex held in debug builds rather
// than declare REQUIRES(mutex_): the analysis cannot see that a CondVar's mutex_ is the Mutex
// its caller locked (a member of another object), so it would refuse every correct wait.
class CondVar {
 public:
  explicit CondVar(Mutex* mutex) : mutex_(mutex) { assert(mutex != nullptr); }
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Waits until notified (or woken spuriously: callers loop on their condition).
  void Wait() {
    mutex_->AssertHeld();
    std::unique_lock<std::mutex> lock(Release());
    condition_.wait(lock);
    Reacquire(lock);
  }
  // Waits until notified or `deadline`; false when the deadline passed.
  template <typename Clock, typename Duration>
  bool WaitUntil(std::chrono::time_point<Clock, Duration> deadline) {
    mutex_->AssertHeld();
    std::unique_lock<std::mutex> lock(Release());
    const bool notified = condition_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    Reacquire(lock);
    return notified;
  }
  // Waits until notified or `timeout` has passed; false when it passed.
  template <typename Rep, typename Period>
  bool WaitFor(std::chrono::duration<Rep, Period> timeout) {
    return WaitUntil(std::chrono::steady_clock::now() + timeout);
  }
  void Signal() { condition_.notify_one(); }
  void SignalAll() { condition_.notify_all(); }

 private:
  // The held mutex as a std::unique_lock for the wait, its holder cleared while the wait lets
  // it go.
  std::unique_lock<std::mutex> Release() {
    mutex_->holder_.store(std::thread::id(), std::memory_order_relaxed);
    return {mutex_->mutex_, std::adopt_lock};
  }
  void Reacquire(std::unique_lock<std::mutex>& lock) {
    lock.release();
    mutex_->holder_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  }

  Mutex* const mutex_;
  std::condition_variable condition_;
};

}  // namespace sluice
