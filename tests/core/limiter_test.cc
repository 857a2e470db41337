#include <utility>  // before asio: Boost 1.74's coroutine support needs it first

#include "sluice/limiter.h"

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/asio/use_future.hpp>

#include "sluice/memory_store.h"

namespace sluice {
namespace {

namespace asio = boost::asio;

// A store that always fails, for the failure policy's logic.
class FailingStore final : public Store {
 public:
  void Apply(std::vector<BucketOp>, StoreCallback done) override {
    done(Status::DeadlineExceeded("no answer within 50 ms"));
  }
};

const Rule kPerKey{"per-key", "key", "", {2, 2, 60'000}, 1};

std::unique_ptr<Limiter> Make(std::shared_ptr<Store> store, LimiterOptions options = {}) {
  auto limiter = Limiter::Create({kPerKey}, std::move(options), std::move(store));
  EXPECT_TRUE(limiter.ok()) << limiter.status().ToString();
  return std::move(limiter).value();
}

TEST(LimiterTest, FailOpenAllowsAndSaysItDidNotCheck) {
  auto limiter = Make(std::make_shared<FailingStore>());
  Decision d = limiter->CheckBlocking({{"key", "a"}});
  EXPECT_TRUE(d.allowed);
  EXPECT_FALSE(d.checked);
  EXPECT_EQ(d.error.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(limiter->Stats().store_errors, 1u);
  EXPECT_EQ(limiter->Stats().failure_policy, 1u);
}

TEST(LimiterTest, FailClosedDenies) {
  LimiterOptions options;
  options.failure = FailurePolicy::kClosed;
  Decision d = Make(std::make_shared<FailingStore>(), options)->CheckBlocking({{"key", "a"}});
  EXPECT_FALSE(d.allowed);
  EXPECT_FALSE(d.checked);
}

TEST(LimiterTest, OverlongValueIsRefusedWhateverThePolicy) {
  auto limiter = Make(std::make_shared<MemoryStore>());
  Decision d = limiter->CheckBlocking({{"key", std::string(10 * 1024, 'k')}});
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.error.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(limiter->Stats().invalid_requests, 1u);
}

TEST(LimiterTest, CreateRefusesBadRulesAndSharedBuckets) {
  auto store = std::make_shared<MemoryStore>();
  EXPECT_FALSE(Limiter::Create({kPerKey, kPerKey}, {}, store).ok());
  Rule other = kPerKey;
  other.name = "per-key-burst";
  auto shared = Limiter::Create({kPerKey, other}, {}, store);
  ASSERT_FALSE(shared.ok());
  EXPECT_NE(shared.status().message().find("bucket"), std::string::npos);
  other.bucket = "key-burst";
  EXPECT_TRUE(Limiter::Create({kPerKey, other}, {}, store).ok());
  Rule broken = kPerKey;
  broken.limit.period_ms = 0;
  EXPECT_FALSE(Limiter::Create({broken}, {}, store).ok());
  EXPECT_FALSE(Limiter::Create({kPerKey}, {}, nullptr).ok());
  LimiterOptions spaced;
  spaced.key_prefix = "rl :";
  EXPECT_FALSE(Limiter::Create({kPerKey}, spaced, store).ok());
}

TEST(LimiterTest, KeyPrefixIsConfigurable) {
  auto clock = std::make_shared<ManualClock>();
  auto store = std::make_shared<MemoryStore>(clock);
  LimiterOptions options;
  options.key_prefix = "edge:";
  Make(store, options)->CheckBlocking({{"key", "a"}});
  std::promise<Result<std::vector<BucketReply>>> peek;
  store->Apply({{"edge:key:a", kPerKey.limit, 0}}, [&](auto r) { peek.set_value(std::move(r)); });
  EXPECT_EQ(peek.get_future().get()->front().remaining, 1);
}

TEST(LimiterTest, AwaitableCompletesOnTheCallersExecutor) {
  auto limiter = Make(std::make_shared<MemoryStore>());
  asio::io_context io;
  std::vector<bool> allowed;
  // Built outside the coroutine: GCC 12 miscompiles initializer lists inside one.
  const Request request{{"key", "co"}};
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        for (int i = 0; i < 3; ++i) {
          Decision d = co_await limiter->AsyncCheck(request, asio::use_awaitable);
          allowed.push_back(d.allowed);
        }
      },
      asio::detached);
  io.run();
  EXPECT_EQ(allowed, (std::vector<bool>{true, true, false}));
}

TEST(LimiterTest, FutureAndCallbackTokens) {
  auto limiter = Make(std::make_shared<MemoryStore>());
  std::future<Decision> f = limiter->AsyncCheck(Request{{"key", "fut"}}, asio::use_future);
  EXPECT_TRUE(f.get().allowed);
  asio::io_context io;
  bool called = false;
  limiter->AsyncCheck(Request{{"key", "fut"}},
                      asio::bind_executor(io, [&](Decision d) { called = d.allowed; }));
  io.run();
  EXPECT_TRUE(called);
}

}  // namespace
}  // namespace sluice
