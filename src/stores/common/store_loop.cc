#include "store_loop.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <utility>
#include <vector>

#include "sluice/mutex.h"

namespace sluice::stores {

namespace {

// The own thread this thread is, if it is one.
thread_local const StoreLoop::OwnThread* running_own_thread = nullptr;

}  // namespace

struct StoreLoop::OwnThread {
  boost::asio::io_context io{1};
  Mutex join_mutex;  // one joiner at a time: the store's Finish, a reaping, the exit
  std::thread thread SLUICE_GUARDED_BY(join_mutex);
  std::atomic<bool> ended{false};  // set by the thread as its last act

  // Joins the thread, unless called on it (then it ends alone).
  void Join() SLUICE_EXCLUDES(join_mutex) {
    MutexLock lock(&join_mutex);
    if (running_own_thread != this && thread.joinable()) thread.join();
  }
};

namespace {

using OwnThreadPtr = std::shared_ptr<StoreLoop::OwnThread>;

// Every own thread not yet joined, so that the process can stop and join them as it exits. Made
// at the first thread's start, after the static objects made before main and at startup (the
// loggers'), so that its exit handler runs before those are destroyed; itself never destroyed,
// since what the exit stopped stays with it (an io_context whose dropped handlers hold a store).
class OwnThreads {
 public:
  static OwnThreads& Get() {
    static OwnThreads* const threads = [] {
      auto* made = new OwnThreads;
      // OpenSSL frees its locks in an exit handler of its own, registered when it is first
      // initialized, which may be on one of these threads (libpq's or a TLS connection's): made
      // here first, it runs after StopAll, once no thread can still hold one of its locks.
      OPENSSL_init_crypto(0, nullptr);
      std::atexit([] { Get().StopAll(); });
      return made;
    }();
    return *threads;
  }

  void Add(OwnThreadPtr thread) SLUICE_EXCLUDES(mutex_) {
    std::vector<OwnThreadPtr> ended;
    {
      MutexLock lock(&mutex_);
      ended = TakeEnded();
      threads_.push_back(std::move(thread));
    }
    for (const OwnThreadPtr& t : ended) t->Join();  // each has returned from its work already
  }

  // Forgets `joined`, and those that have ended.
  void Remove(const StoreLoop::OwnThread* joined) SLUICE_EXCLUDES(mutex_) {
    std::vector<OwnThreadPtr> ended;
    {
      MutexLock lock(&mutex_);
      if (exiting_) return;
      std::erase_if(threads_, [&](const OwnThreadPtr& t) { return t.get() == joined; });
      ended = TakeEnded();
    }
    for (const OwnThreadPtr& t : ended) t->Join();
  }

 private:
  // Kept while the process exits, for the reason above.
  std::vector<OwnThreadPtr> TakeEnded() SLUICE_REQUIRES(mutex_) {
    std::vector<OwnThreadPtr> ended;
    if (exiting_) return ended;
    auto first = std::stable_partition(threads_.begin(), threads_.end(), [](const auto& t) {
      return !t->ended.load(std::memory_order_acquire);
    });
    std::move(first, threads_.end(), std::back_inserter(ended));
    threads_.erase(first, threads_.end());
    return ended;
  }

  void StopAll() SLUICE_EXCLUDES(mutex_) {
    std::vector<OwnThreadPtr> all;
    {
      MutexLock lock(&mutex_);
      exiting_ = true;
      all = threads_;
    }
    // Not under mutex_: a thread stopping may end a store of another thread, which asks to be
    // removed.
    for (const OwnThreadPtr& t : all) {
      t->io.stop();
      t->Join();
    }
  }

  Mutex mutex_;
  std::vector<OwnThreadPtr> threads_ SLUICE_GUARDED_BY(mutex_);
  bool exiting_ SLUICE_GUARDED_BY(mutex_) = false;
};

}  // namespace

StoreLoop::StoreLoop(boost::asio::io_context* external)
    : own_(external != nullptr ? nullptr : std::make_shared<OwnThread>()),
      io_(external != nullptr ? *external : own_->io) {}

StoreLoop::~StoreLoop() = default;

void StoreLoop::Start(std::shared_ptr<void> owner) {
  if (!own_) return;
  work_.emplace(own_->io.get_executor());
  OwnThread* own = own_.get();  // the list keeps it until the thread is joined
  {
    MutexLock lock(&own->join_mutex);
    own->thread = std::thread([own, owner = std::move(owner)]() mutable {
      running_own_thread = own;
      own->io.run();
      owner.reset();  // may destroy this StoreLoop: nothing of it is touched after
      own->ended.store(true, std::memory_order_release);
    });
  }
  OwnThreads::Get().Add(own_);
}

void StoreLoop::Finish() {
  if (!own_) return;
  work_.reset();
  if (running_own_thread == own_.get()) return;  // ends alone; joined later, as above
  own_->Join();
  OwnThreads::Get().Remove(own_.get());
}

}  // namespace sluice::stores
