// The store conformance suite's fixture, shared by its files (store_conformance_test.cc, which
// instantiates it on every kind of store, and store_conformance_policies_test.cc): each case runs
// on each store, which must decide alike.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "sluice/limiter.h"
#include "sluice/store.h"
#include "support/apply_blocking.h"
#include "support/manual_clock.h"
#include "support/wait_until.h"

namespace sluice::conformance {

// A store, and what it runs on (a server of its own, or nothing when it is shared or in
// process): the store goes first.
struct MadeStore {
  std::shared_ptr<void> backend;
  std::shared_ptr<Store> store;
  // The time the store's buckets read, in milliseconds: the server's (TIME), or the memory
  // store's clock, which `clock` moves.
  std::function<int64_t()> now_ms;
  std::shared_ptr<testing::ManualClock> clock;
};

struct StoreUnderTest {
  const char* name;
  bool in_process;  // the memory store: all-or-nothing never falls back
  std::function<MadeStore()> make;
};

// Names the store in test output instead of dumping the struct's bytes.
inline void PrintTo(const StoreUnderTest& kind, std::ostream* os) { *os << kind.name; }

// One case on one kind of store.
class StoreConformanceTest : public ::testing::TestWithParam<StoreUnderTest> {
 protected:
  void SetUp() override {
    made_ = GetParam().make();
    store_ = made_.store;
  }

  // Lets `ms` of the store's time pass: the memory store's clock is moved; a server's clock is
  // its own (TIME), which the test waits for.
  void PassTime(int64_t ms) {
    if (made_.clock) return made_.clock->Advance(ms);
    const int64_t until = made_.now_ms() + ms;
    ASSERT_TRUE(testing::WaitUntil([&] { return made_.now_ms() >= until; },
                                   std::chrono::milliseconds(ms + 5000)));
  }

  std::unique_ptr<Limiter> MakeLimiter(std::vector<Rule> rules,
                                       MultiRulePolicy policy = MultiRulePolicy::kChargeAll) {
    LimiterOptions options;
    options.policy = policy;
    return MakeLimiter(std::move(rules), options);
  }

  std::unique_ptr<Limiter> MakeLimiter(std::vector<Rule> rules, const LimiterOptions& options) {
    auto limiter = Limiter::Create(std::move(rules), options, store_);
    EXPECT_TRUE(limiter.ok()) << limiter.status().ToString();
    return std::move(limiter).value();
  }

  // Tokens left in a bucket, looked at with a cost of 0.
  int64_t Remaining(const std::string& key, Limit limit,
                    Algorithm algorithm = Algorithm::kTokenBucket) {
    auto replies = testing::ApplyBlocking(*store_, {{key, limit, 0, {}, algorithm}});
    EXPECT_TRUE(replies.ok()) << replies.status().ToString();
    return replies.ok() ? replies->front().remaining : -1;
  }

  MadeStore made_;  // outlives store_; its backend outlives its store
  std::shared_ptr<Store> store_;
};

// Slow refills (per hour) so that the time a test takes gives no token back.
inline const Limit kFivePerHour{5, 5, 3'600'000};
inline const Limit kTenPerHour{10, 10, 3'600'000};
inline const Limit kHundredPerHour{100, 100, 3'600'000};

}  // namespace sluice::conformance
