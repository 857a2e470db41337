#include "stores/common/store_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <thread>
#include <utility>

namespace sluice::stores {
namespace {

// Set when the store's thread has torn it down.
std::atomic<bool> torn_down{false};

// What runs on a store's own thread (as CallPipeline does): it stops its loop when its store
// goes.
struct Owner {
  ~Owner() { torn_down.store(true); }

  StoreLoop loop{nullptr};
};

// The store as its users hold it (as RedisStore does): the last reference stops the owner.
struct Handle {
  explicit Handle(std::shared_ptr<Owner> started) : owner(std::move(started)) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { owner->loop.Finish(); }

  std::shared_ptr<Owner> owner;
};

// Exits 0 when the store has been torn down.
void ExitWhenTornDown() { std::_Exit(torn_down.load() ? 0 : 1); }

// The program goes on as soon as it has its answer, and exits, while the callback that gave it
// still runs on the store's thread and then drops the last reference to the store there (what a
// blocking check followed by the end of main does). The exit waits for that thread: the store's
// teardown never overlaps the teardown of static objects and libraries.
TEST(StoreLoopTest, AThreadItsOwnCallbackLetsGoIsJoinedAtExit) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::atexit(ExitWhenTornDown);  // before the loop's: runs after it
        auto owner = std::make_shared<Owner>();
        owner->loop.Start(owner);
        auto handle = std::make_shared<Handle>(owner);
        owner.reset();
        std::promise<void> answered;
        boost::asio::post(handle->owner->loop.io(), [&answered, handle]() mutable {
          answered.set_value();
          // Outlives the main thread's exit on purpose: the race the test is about, which no
          // clock or poll can stand for.
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          handle.reset();
        });
        answered.get_future().wait();
        handle.reset();
        // What exit does is the test: ExitWhenTornDown decides the code.
        std::exit(0);  // NOLINT(concurrency-mt-unsafe)
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace sluice::stores
