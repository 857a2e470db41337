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
class SLUICE_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() SLUICE_ACQUIRE() {
    mutex_.lock();
    holder_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  }
  void Unlock() SLUICE_RELEASE() {
    holder_.store(std::thread::id(), std::memory_order_relaxed);
    mutex_.unlock();
  }
  // Fails (in debug builds) unless the calling thread holds the mutex; after it the analysis
  // takes the mutex as held, where it cannot see that itself (a callback run under the lock).
  void AssertHeld() const SLUICE_ASSERT_CAPABILITY(this) {
    assert(holder_.load(std::memory_order_relaxed) == std::this_thread::get_id());
  }

 private:
  friend class CondVar;
  std::mutex mutex_;
  // Only the holder writes its own id here, so a relaxed read by that thread sees it.
  std::atomic<std::thread::id> holder_{};
};

// Holds a Mutex for its scope.
class SLUICE_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mutex) SLUICE_ACQUIRE(mutex) : mutex_(mutex) { mutex_->Lock(); }
  ~MutexLock() SLUICE_RELEASE() { mutex_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mutex_;
};

// A condition variable, waited on with a Mutex held: the wait lets the mutex go and holds it
// again on return. The mutex is named at each wait, so that the analysis sees the caller hold it.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Waits until notified (or woken spuriously: callers loop on their condition).
  void Wait(Mutex* mutex) SLUICE_REQUIRES(mutex) {
    std::unique_lock<std::mutex> lock = Release(mutex);
    condition_.wait(lock);
    Reacquire(mutex, lock);
  }
  // Waits until notified or `deadline`; false when the deadline passed.
  template <typename Clock, typename Duration>
  bool WaitUntil(Mutex* mutex, std::chrono::time_point<Clock, Duration> deadline)
      SLUICE_REQUIRES(mutex) {
    std::unique_lock<std::mutex> lock = Release(mutex);
    const bool notified = condition_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    Reacquire(mutex, lock);
    return notified;
  }
  // Waits until notified or `timeout` has passed; false when it passed.
  template <typename Rep, typename Period>
  bool WaitFor(Mutex* mutex, std::chrono::duration<Rep, Period> timeout) SLUICE_REQUIRES(mutex) {
    return WaitUntil(mutex, std::chrono::steady_clock::now() + timeout);
  }
  void Signal() { condition_.notify_one(); }
  void SignalAll() { condition_.notify_all(); }

 private:
  // The held mutex as a std::unique_lock for the wait, its holder cleared while the wait lets
  // it go.
  static std::unique_lock<std::mutex> Release(Mutex* mutex) {
    mutex->AssertHeld();
    mutex->holder_.store(std::thread::id(), std::memory_order_relaxed);
    return {mutex->mutex_, std::adopt_lock};
  }
  static void Reacquire(Mutex* mutex, std::unique_lock<std::mutex>& lock) {
    lock.release();
    mutex->holder_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  }

  std::condition_variable condition_;
};

}  // namespace sluice
