#include "sluice/limiter.h"

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/asio/use_future.hpp>

#include "sluice/limiter_async.h"
#include "sluice/memory_store.h"
#include "sluice/over_limit_cache.h"
#include "support/fake_store.h"
#include "support/manual_clock.h"

namespace sluice {
namespace {

namespace asio = boost::asio;

// A store that always fails, for the failure policy's logic.
std::shared_ptr<Store> FailingStore() {
  auto store = std::make_shared<testing::FakeStore>();
  store->FailWith(Status::DeadlineExceeded("no answer within 50 ms"));
  return store;
}

const Rule kPerKey{"per-key", "key", "", {2, 2, 60'000}, 1};

std::unique_ptr<Limiter> Make(std::shared_ptr<Store> store, LimiterOptions options = {}) {
  auto limiter = Limiter::Create({kPerKey}, std::move(options), std::move(store));
  EXPECT_TRUE(limiter.ok()) << limiter.status().ToString();
  return std::move(limiter).value();
}

TEST(LimiterTest, FailOpenAllowsAndSaysItDidNotCheck) {
  auto limiter = Make(FailingStore());
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
  Decision d = Make(FailingStore(), options)->CheckBlocking({{"key", "a"}});
  EXPECT_FALSE(d.allowed);
  EXPECT_FALSE(d.checked);
}

TEST(LimiterTest, OverLimitCacheAnswersAnEmptyBucketUntilItsRetryTime) {
  auto clock = std::make_shared<testing::ManualClock>(0);
  auto store = std::make_shared<testing::FakeStore>(std::make_shared<MemoryStore>(clock));
  LimiterOptions options;
  options.over_limit_cache = std::make_shared<OverLimitCache>(clock, 1000);
  auto limiter = Make(store, options);  // 2 a minute: one token every 30 s
  const Request a{{"key", "a"}};
  EXPECT_TRUE(limiter->CheckBlocking(a).allowed);
  EXPECT_TRUE(limiter->CheckBlocking(a).allowed);
  Decision rejected = limiter->CheckBlocking(a);
  EXPECT_FALSE(rejected.allowed);
  EXPECT_FALSE(rejected.from_cache);
  EXPECT_EQ(store->calls(), 3);
  for (int i = 0; i < 10; ++i) {
    Decision d = limiter->CheckBlocking(a);
    EXPECT_FALSE(d.allowed);
    EXPECT_TRUE(d.from_cache);
    EXPECT_TRUE(d.checked);
    EXPECT_EQ(d.retry_after_s, 30);
  }
  EXPECT_EQ(store->calls(), 3) << "the store was asked about a key the cache knows is empty";
  EXPECT_EQ(limiter->Stats().cache_rejections, 10u);
  EXPECT_TRUE(limiter->CheckBlocking({{"key", "b"}}).allowed);  // other keys are not touched
  clock->Advance(30'000);
  EXPECT_TRUE(limiter->CheckBlocking(a).allowed);  // the token is back, and the store says so
  EXPECT_EQ(store->calls(), 5);
}

TEST(LimiterTest, OverlongValueIsRefusedWhateverThePolicy) {
  auto limiter = Make(std::make_shared<MemoryStore>());
  Decision d = limiter->CheckBlocking({{"key", std::string(size_t{10} * 1024, 'k')}});
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
  auto clock = std::make_shared<testing::ManualClock>();
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
          Decision d = co_await AsyncCheck(*limiter, request, asio::use_awaitable);
          allowed.push_back(d.allowed);
        }
      },
      asio::detached);
  io.run();
  EXPECT_EQ(allowed, (std::vector<bool>{true, true, false}));
}

TEST(LimiterTest, FutureAndCallbackTokens) {
  auto limiter = Make(std::make_shared<MemoryStore>());
  std::future<Decision> f = AsyncCheck(*limiter, Request{{"key", "fut"}}, asio::use_future);
  EXPECT_TRUE(f.get().allowed);
  asio::io_context io;
  bool called = false;
  AsyncCheck(*limiter, Request{{"key", "fut"}},
             asio::bind_executor(io, [&](const Decision& d) { called = d.allowed; }));
  io.run();
  EXPECT_TRUE(called);
}

TEST(LimiterTest, ShadowRuleIsCountedButNeverRejects) {
  Rule shadow = kPerKey;
  shadow.shadow = true;
  auto limiter = std::move(Limiter::Create({shadow}, {}, std::make_shared<MemoryStore>())).value();
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(limiter->CheckBlocking({{"key", "s"}}).allowed);
  Decision d = limiter->CheckBlocking({{"key", "s"}});
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.shadow_rejections, 1u);
  ASSERT_EQ(d.verdicts.size(), 1u);
  EXPECT_FALSE(d.verdicts[0].allowed);
}

TEST(LimiterTest, StopAtFirstGoesOnPastAShadowRejection) {
  Rule shadow{"shadow", "ip", "", {1, 1, 60'000}, 1};
  shadow.shadow = true;
  LimiterOptions options;
  options.policy = MultiRulePolicy::kStopAtFirst;
  auto limiter =
      std::move(Limiter::Create({shadow, kPerKey}, options, std::make_shared<MemoryStore>()))
          .value();
  limiter->CheckBlocking({{"ip", "1"}, {"key", "k"}});
  Decision d = limiter->CheckBlocking({{"ip", "1"}, {"key", "k"}});
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.verdicts.size(), 2u);
}

TEST(LimiterTest, RouteLimitsWhichRequestsARuleChecks) {
  Rule api = kPerKey;
  api.methods = {"GET", "POST"};
  api.path_prefix = "/api/";
  auto limiter = std::move(Limiter::Create({api}, {}, std::make_shared<MemoryStore>())).value();
  auto verdicts = [&](const std::string& method, const std::string& path) {
    Request request{{"key", "r"}};
    request.SetRoute(method, path);
    return limiter->CheckBlocking(request).verdicts.size();
  };
  EXPECT_EQ(verdicts("GET", "/api/users"), 1u);
  EXPECT_EQ(verdicts("POST", "/api/"), 1u);
  EXPECT_EQ(verdicts("DELETE", "/api/users"), 0u);
  EXPECT_EQ(verdicts("GET", "/static/app.js"), 0u);
  EXPECT_EQ(verdicts("GET", "/ap"), 0u);
}

TEST(LimiterTest, OverrideGivesOneValueItsOwnLimit) {
  Rule rule = kPerKey;
  rule.overrides.emplace("ak_big", Limit{5, 5, 60'000});
  auto limiter = std::move(Limiter::Create({rule}, {}, std::make_shared<MemoryStore>())).value();
  EXPECT_EQ(limiter->CheckBlocking({{"key", "ak_big"}}).verdicts[0].remaining, 4);
  EXPECT_EQ(limiter->CheckBlocking({{"key", "ak_small"}}).verdicts[0].remaining, 1);
  rule.overrides["ak_bad"] = Limit{0, 5, 60'000};
  auto bad = Limiter::Create({rule}, {}, std::make_shared<MemoryStore>());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ak_bad"), std::string::npos);
}

}  // namespace
}  // namespace sluice
