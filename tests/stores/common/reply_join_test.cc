#include "stores/common/reply_join.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

namespace sluice::stores {
namespace {

using Replies = Result<std::vector<BucketReply>>;

// What the callback heard, and how often it ran.
struct Heard {
  std::optional<Replies> result;
  int calls = 0;

  StoreCallback Callback() {
    return [this](Replies r) {
      ++calls;
      result = std::move(r);
    };
  }
};

BucketReply Remaining(int64_t remaining) { return {true, remaining, 0, 0}; }

TEST(ReplyJoinTest, PutsPartsBackInTheOpsOrder) {
  Heard heard;
  ReplyJoin join(4, 2, ReplyJoin::OnError::kAnswerAtOnce, heard.Callback());
  join.Answer({3, 0}, std::vector<BucketReply>{Remaining(30), Remaining(0)});
  EXPECT_EQ(heard.calls, 0);
  EXPECT_FALSE(join.Answered());
  join.Answer({1, 2}, std::vector<BucketReply>{Remaining(10), Remaining(20)});
  ASSERT_EQ(heard.calls, 1);
  EXPECT_TRUE(join.Answered());
  ASSERT_TRUE(heard.result->ok());
  ASSERT_EQ((*heard.result)->size(), 4u);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ((**heard.result)[i].remaining, 10 * i);
}

TEST(ReplyJoinTest, ReleaseHoldsTheAnswerUntilEveryPartIsHandedOut) {
  Heard heard;
  ReplyJoin join(2, 3, ReplyJoin::OnError::kAnswerAtOnce, heard.Callback());
  join.Set(0, Remaining(1));
  join.Set(1, Remaining(2));
  EXPECT_EQ(heard.calls, 0);
  join.Release();
  ASSERT_EQ(heard.calls, 1);
  ASSERT_TRUE(heard.result->ok());
  EXPECT_EQ((**heard.result)[1].remaining, 2);
}

TEST(ReplyJoinTest, AnswerAtOnceFailsOnTheFirstErrorAndIgnoresTheRest) {
  Heard heard;
  ReplyJoin join(3, 4, ReplyJoin::OnError::kAnswerAtOnce, heard.Callback());
  join.Set(0, Remaining(1));
  join.Fail(Status::Unavailable("first"));
  ASSERT_EQ(heard.calls, 1);
  EXPECT_TRUE(join.Answered());
  join.Answer({2}, Status::StoreError("second"));
  join.Set(1, Remaining(2));
  EXPECT_EQ(heard.calls, 1);
  ASSERT_FALSE(heard.result->ok());
  EXPECT_EQ(heard.result->status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(heard.result->status().message(), "first");
}

TEST(ReplyJoinTest, AfterEveryPartWaitsForTheLastPartThenGivesTheFirstError) {
  Heard heard;
  ReplyJoin join(3, 3, ReplyJoin::OnError::kAfterEveryPart, heard.Callback());
  join.Answer({0}, Status::StoreError("first"));
  EXPECT_EQ(heard.calls, 0);
  join.Fail(Status::Unavailable("second"));
  EXPECT_EQ(heard.calls, 0);
  EXPECT_FALSE(join.Answered());
  join.Answer({1, 2}, std::vector<BucketReply>{Remaining(1), Remaining(2)});
  ASSERT_EQ(heard.calls, 1);
  ASSERT_FALSE(heard.result->ok());
  EXPECT_EQ(heard.result->status().message(), "first");
}

TEST(ReplyJoinTest, OnePartAnswersOnce) {
  Heard heard;
  ReplyJoin join(0, 1, ReplyJoin::OnError::kAfterEveryPart, heard.Callback());
  join.Release();
  ASSERT_EQ(heard.calls, 1);
  ASSERT_TRUE(heard.result->ok());
  EXPECT_TRUE((*heard.result)->empty());
}

// Parts answered from several threads at once: the callback runs once, after the last part,
// with every position filled by its own part.
TEST(ReplyJoinTest, PartsFromManyThreadsAnswerOnceWithEveryReply) {
  constexpr size_t kThreads = 8;
  constexpr size_t kPerThread = 500;
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> calls{0};
    std::vector<BucketReply> heard;
    auto join = std::make_shared<ReplyJoin>(kThreads * kPerThread, kThreads * kPerThread + 1,
                                            ReplyJoin::OnError::kAnswerAtOnce, [&](Replies r) {
                                              calls.fetch_add(1);
                                              ASSERT_TRUE(r.ok());
                                              heard = std::move(r).value();
                                            });
    std::vector<std::thread> threads;
    for (size_t t = 0; t < kThreads; ++t) {
      threads.emplace_back([join, t] {
        for (size_t i = 0; i < kPerThread; ++i) {
          const size_t position = i * kThreads + t;
          if (i % 2 == 0) {
            join->Set(position, Remaining(static_cast<int64_t>(position)));
          } else {
            join->Answer({position},
                         std::vector<BucketReply>{Remaining(static_cast<int64_t>(position))});
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(calls.load(), 0) << "answered before the builder's hold was released";
    join->Release();
    ASSERT_EQ(calls.load(), 1);
    ASSERT_EQ(heard.size(), kThreads * kPerThread);
    for (size_t i = 0; i < heard.size(); ++i) {
      ASSERT_EQ(heard[i].remaining, static_cast<int64_t>(i));
    }
  }
}

// Failures racing successes from several threads: exactly one answer, the failure.
TEST(ReplyJoinTest, FailuresRacingFromManyThreadsAnswerOnce) {
  constexpr size_t kThreads = 6;
  for (ReplyJoin::OnError policy :
       {ReplyJoin::OnError::kAnswerAtOnce, ReplyJoin::OnError::kAfterEveryPart}) {
    for (int round = 0; round < 50; ++round) {
      std::atomic<int> calls{0};
      std::atomic<bool> failed{false};
      auto join = std::make_shared<ReplyJoin>(kThreads, kThreads, policy, [&](const Replies& r) {
        calls.fetch_add(1);
        failed.store(!r.ok());
      });
      std::vector<std::thread> threads;
      for (size_t t = 0; t < kThreads; ++t) {
        threads.emplace_back([join, t] {
          if (t % 3 == 0) return join->Fail(Status::Unavailable("down"));
          join->Set(t, Remaining(1));
        });
      }
      for (std::thread& t : threads) t.join();
      EXPECT_EQ(calls.load(), 1);
      EXPECT_TRUE(failed.load());
    }
  }
}

}  // namespace
}  // namespace sluice::stores
