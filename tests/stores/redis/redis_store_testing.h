// What the Redis store's tests share: a store once it is connected, a limiter of one rule, and
// refills slow enough that a test's own time gives no token back.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <utility>

#include "sluice/limiter.h"
#include "sluice/redis_store.h"

namespace sluice::testing {

inline const Limit kHundredPerHour{100, 100, 3'600'000};
inline const Limit kHundredPerMinute{100, 100, 60'000};

// A limiter of one rule, "per-key" on the attribute "key", over `store`.
inline std::unique_ptr<Limiter> MakeLimiter(std::shared_ptr<Store> store, Limit limit,
                                            FailurePolicy failure = FailurePolicy::kOpen) {
  LimiterOptions options;
  options.failure = failure;
  auto limiter = Limiter::Create({{"per-key", "key", "", limit, 1}}, options, std::move(store));
  EXPECT_TRUE(limiter.ok()) << limiter.status().ToString();
  return std::move(limiter).value();
}

// A RedisStore on `options`, once it has connected.
inline std::shared_ptr<RedisStore> Connect(const RedisOptions& options) {
  auto store = std::make_shared<RedisStore>(options);
  EXPECT_TRUE(store->WaitReady(std::chrono::seconds(5)));
  return store;
}

}  // namespace sluice::testing
