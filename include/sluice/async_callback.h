// An operation that calls back once, as an Asio asynchronous operation with any completion
// token: a callback, asio::use_awaitable, asio::use_future.
#pragma once

#include <atomic>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>
#include <memory>
#include <type_traits>
#include <utility>

namespace sluice {

// Calls `start` with a callback that it (or whatever it hands the callback to) calls once, with
// the result, inline or from any thread; completes `token` with that result on the token's
// associated executor. A result given while `start` runs is posted, so that the completion never
// runs inside this call; one given later is dispatched, so that a result that arrives on the
// executor's own thread (a store's reply on the gateway's event loop) completes at once, without
// another turn of the loop. A token with no executor of its own is always posted.
template <typename Result, typename Start, typename CompletionToken>
auto AsyncFromCallback(Start&& start, CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(Result)>(
      [](auto handler, auto start_operation) {
        using Handler = decltype(handler);
        using Executor = boost::asio::associated_executor_t<Handler>;
        struct Operation {
          Operation(Handler h, Executor executor)
              : handler(std::move(h)), work(boost::asio::make_work_guard(executor)) {}
          Handler handler;
          boost::asio::executor_work_guard<Executor> work;
          std::atomic<bool> started{false};
        };
        const Executor executor = boost::asio::get_associated_executor(handler);
        auto operation = std::make_shared<Operation>(std::move(handler), executor);
        start_operation([operation](Result result) {
          auto complete = [operation, result = std::move(result)]() mutable {
            operation->handler(std::move(result));
          };
          const Executor target = operation->work.get_executor();
          // No executor of the caller's own (a plain callback, a future): posted, so that the
          // completion never runs on, and never blocks, the thread that gave the result.
          constexpr bool kOwnExecutor = !std::is_same_v<Executor, boost::asio::system_executor>;
          if (kOwnExecutor && operation->started.load(std::memory_order_acquire)) {
            boost::asio::dispatch(target, std::move(complete));
          } else {
            boost::asio::post(target, std::move(complete));
          }
          operation->work.reset();
        });
        operation->started.store(true, std::memory_order_release);
      },
      token, std::forward<Start>(start));
}

}  // namespace sluice
