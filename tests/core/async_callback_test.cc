#include "sluice/async_callback.h"

#include <gtest/gtest.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <future>
#include <thread>

namespace sluice {
namespace {

namespace asio = boost::asio;
using IntCallback = std::function<void(int)>;

TEST(AsyncFromCallbackTest, AResultGivenAtOnceIsPostedNotRunInsideTheCall) {
  asio::io_context io;
  int got = 0;
  AsyncFromCallback<int>([](const IntCallback& done) { done(7); },
                         asio::bind_executor(io, [&](int v) { got = v; }));
  EXPECT_EQ(got, 0);
  io.run();
  EXPECT_EQ(got, 7);
}

TEST(AsyncFromCallbackTest, ALaterResultOnTheExecutorsThreadCompletesAtOnce) {
  asio::io_context io;
  IntCallback later;
  int got = 0;
  bool completed_inside_the_callback = false;
  AsyncFromCallback<int>([&](IntCallback done) { later = std::move(done); },
                         asio::bind_executor(io, [&](int v) { got = v; }));
  asio::post(io, [&] {
    later(9);  // as a store's reply handler on the loop calls back
    completed_inside_the_callback = got == 9;
  });
  io.run();
  EXPECT_TRUE(completed_inside_the_callback);
}

TEST(AsyncFromCallbackTest, AResultFromAnotherThreadCompletesOnTheExecutor) {
  asio::io_context io;
  auto guard = asio::make_work_guard(io);
  std::thread::id completed_on;
  AsyncFromCallback<int>(
      [](IntCallback done) { std::thread([done = std::move(done)] { done(1); }).detach(); },
      asio::bind_executor(io, [&](int) {
        completed_on = std::this_thread::get_id();
        guard.reset();
      }));
  io.run();
  EXPECT_EQ(completed_on, std::this_thread::get_id());
}

TEST(AsyncFromCallbackTest, ACallbackWithNoExecutorNeverRunsOnTheThreadThatGaveTheResult) {
  std::promise<std::thread::id> completed_on;
  IntCallback later;
  AsyncFromCallback<int>([&](IntCallback done) { later = std::move(done); },
                         [&](int) { completed_on.set_value(std::this_thread::get_id()); });
  later(1);  // given after the call, on this thread: posted to the system executor's threads
  EXPECT_NE(completed_on.get_future().get(), std::this_thread::get_id());
}

}  // namespace
}  // namespace sluice
