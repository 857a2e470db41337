#include "fault_drill.h"
#include "support/load_pacing.h"
#include "support/wait_until.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>

namespace sluice::testing {

namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// The store has answered again once every check submitted this long after the last failure was
// answered.
constexpr milliseconds kSettle{300};

int64_t Ms(Clock::duration d) { return std::chrono::duration_cast<milliseconds>(d).count(); }

std::string Describe(const FaultCase& c) {
  std::string name(FaultName(c.fault));
  if (c.delay.count() > 0) name += " " + std::to_string(c.delay.count()) + " ms";
  return name + " for " + std::to_string(c.lasts.count()) + " ms";
}

// What one fault came to for the threads behind the proxy.
struct Outcome {
  size_t answered_during = 0;
  size_t failed_during = 0;
  int64_t slowest_failure_ms = 0;
  std::optional<int64_t> recovery_ms;  // from the fault's end to the store answering for good
};

Outcome Assess(const std::vector<CheckLoad::Record>& records, const std::vector<bool>& faulted,
               Clock::time_point injected, Clock::time_point healed, Clock::time_point now) {
  Outcome o;
  std::optional<Clock::time_point> last_failure;  // of a check submitted after the fault's end
  for (const CheckLoad::Record& r : records) {
    if (!faulted[r.thread] || r.decided < injected) continue;
    if (r.submitted < healed) {
      ++(r.answered ? o.answered_during : o.failed_during);
      if (!r.answered) {
        o.slowest_failure_ms = std::max(o.slowest_failure_ms, Ms(r.decided - r.submitted));
      }
    } else if (!r.answered) {
      last_failure = std::max(last_failure.value_or(r.decided), r.decided);
    }
  }
  const Clock::time_point from = last_failure.value_or(healed);
  if (now - from < kSettle) return o;
  std::optional<Clock::time_point> first_answer;
  for (const CheckLoad::Record& r : records) {
    if (faulted[r.thread] && r.answered && r.submitted >= from &&
        (!first_answer || r.decided < *first_answer)) {
      first_answer = r.decided;
    }
  }
  if (first_answer) o.recovery_ms = std::max<int64_t>(0, Ms(*first_answer - healed));
  return o;
}

}  // namespace

std::vector<FaultCase> EveryFault(milliseconds reset_lasts) {
  return {
      {Fault::kLatency, milliseconds(20), milliseconds(400), true, kDrillRecovery},
      {Fault::kLatency, milliseconds(150), milliseconds(400), false, kDrillRecovery},
      {Fault::kByteByByte, milliseconds(1), milliseconds(400), true, kDrillRecovery},
      // Shorter than the stall limit (10 timeouts, at least 1 s): the connection stays, and the
      // calls held come through late, ahead of the calls of later checks.
      {Fault::kStall, milliseconds(0), milliseconds(600), false, kDrillRecovery},
      {Fault::kHalfClose, milliseconds(0), milliseconds(400), false, kDrillReconnectRecovery},
      {Fault::kCutReply, milliseconds(0), milliseconds(400), false, kDrillReconnectRecovery},
      {Fault::kReset, milliseconds(0), reset_lasts, false, kDrillReconnectRecovery},
      {Fault::kRefuse, milliseconds(0), milliseconds(400), false, kDrillReconnectRecovery},
  };
}

std::vector<std::vector<DrillBucket>> DrillBuckets(size_t threads, size_t per_thread,
                                                   const std::string& prefix) {
  std::vector<std::vector<DrillBucket>> buckets(threads);
  int64_t capacity = 0;
  for (size_t t = 0; t < threads; ++t) {
    for (size_t i = 0; i < per_thread; ++i) {
      capacity += 10'000;
      buckets[t].push_back({prefix + std::to_string(t) + "_" + std::to_string(i), capacity});
    }
  }
  return buckets;
}

CheckLoad::CheckLoad(std::vector<std::vector<DrillBucket>> buckets, Check check, Charged charged)
    : check_(std::move(check)), charged_(std::move(charged)), buckets_(std::move(buckets)) {
  for (size_t t = 0; t < buckets_.size(); ++t) threads_.emplace_back([this, t] { Run(t); });
}

CheckLoad::~CheckLoad() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  for (std::thread& t : threads_) t.join();
}

std::vector<CheckLoad::Record> CheckLoad::Records() const {
  std::lock_guard lock(mutex_);
  return records_;
}

void CheckLoad::Run(size_t t) {
  for (size_t i = 0;; ++i) {
    DrillBucket& bucket = buckets_[t][i % buckets_[t].size()];
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return !paused_ || stop_; });
      if (stop_) return;
      ++checking_;
      ++bucket.sent;
    }
    Record record{t, Clock::now(), {}, false};
    const std::optional<int64_t> remaining = check_(t, bucket);
    record.decided = Clock::now();
    record.answered = remaining.has_value();
    Note(t, record, remaining, bucket);
    PaceLoad(milliseconds(2));
  }
}

void CheckLoad::Note(size_t t, const Record& record, std::optional<int64_t> remaining,
                     DrillBucket& bucket) {
  EXPECT_LE(Ms(record.decided - record.submitted), (kDrillTimeout + kDrillSlack).count())
      << "thread " << t << ", bucket " << bucket.value << ", answered " << record.answered;
  std::lock_guard lock(mutex_);
  if (remaining) {
    ++bucket.answered;
    // Taken: at least the checks the store answered, at most the checks sent.
    EXPECT_GE(*remaining, bucket.capacity - bucket.sent)
        << "a reply to another check answered bucket " << bucket.value;
    EXPECT_LE(*remaining, bucket.capacity - bucket.answered)
        << "a reply to another check answered bucket " << bucket.value;
  }
  records_.push_back(record);
  --checking_;
  changed_.notify_all();
}

std::vector<int64_t> CheckLoad::Unanswered() {
  std::vector<std::vector<DrillBucket>> buckets;
  {
    std::unique_lock lock(mutex_);
    paused_ = true;
    changed_.wait(lock, [this] { return checking_ == 0; });
    buckets = buckets_;
  }
  std::vector<int64_t> unanswered;
  for (size_t t = 0; t < buckets.size(); ++t) {
    int64_t n = 0;
    for (const DrillBucket& b : buckets[t]) n += charged_(t, b) - b.answered;
    unanswered.push_back(n);
  }
  {
    std::lock_guard lock(mutex_);
    paused_ = false;
  }
  changed_.notify_all();
  return unanswered;
}

void Drill(const std::string& topology, FaultProxy& proxy, CheckLoad& load,
           const std::vector<bool>& faulted, const std::vector<FaultCase>& cases) {
  EXPECT_TRUE(WaitUntil([&] { return load.Records().size() >= 50; })) << "the load never started";
  for (const FaultCase& c : cases) {
    SCOPED_TRACE(topology + ": " + Describe(c));
    const std::vector<int64_t> before = load.Unanswered();
    const Clock::time_point injected = Clock::now();
    proxy.Inject(c.fault, c.delay);
    // The fault's own length: what the test injects is an outage of this long, in real time.
    std::this_thread::sleep_for(c.lasts);
    const Clock::time_point healed = Clock::now();
    proxy.Heal();
    Outcome o;
    WaitUntil(
        [&] {
          o = Assess(load.Records(), faulted, injected, healed, Clock::now());
          return o.recovery_ms.has_value();
        },
        c.recovery + milliseconds(500));
    const std::vector<int64_t> after = load.Unanswered();
    int64_t late = 0;
    for (size_t t = 0; t < faulted.size(); ++t) {
      if (faulted[t]) {
        late += after[t] - before[t];
      } else {  // a check on another shard is never charged without its answer
        EXPECT_EQ(after[t], before[t]) << "thread " << t;
      }
    }
    std::cout << topology << ", " << Describe(c) << ": " << o.answered_during << " answered, "
              << o.failed_during << " by the failure policy (slowest " << o.slowest_failure_ms
              << " ms), " << late << " charged without an answer; answering again "
              << (o.recovery_ms ? std::to_string(*o.recovery_ms) + " ms" : "never")
              << " after the end\n";
    if (c.answers) {
      EXPECT_GT(o.answered_during, 0u) << "a slow server still answers in time";
    } else {
      EXPECT_GT(o.failed_during, 0u) << "the fault was not felt";
    }
    // The calls a stall held came through after their checks had timed out, ahead of later
    // checks' calls: the counts those checks were answered with were their own.
    if (c.fault == Fault::kStall) {
      EXPECT_GT(late, 0) << "nothing came late";
    }
    ASSERT_TRUE(o.recovery_ms.has_value()) << "the store did not answer again";
    EXPECT_LE(*o.recovery_ms, c.recovery.count());
  }
  for (const CheckLoad::Record& r : load.Records()) {
    if (!faulted[r.thread]) {
      EXPECT_TRUE(r.answered) << "another shard felt the fault";
    }
  }
}

}  // namespace sluice::testing
