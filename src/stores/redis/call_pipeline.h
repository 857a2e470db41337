// The calls of a Redis store: submissions gathered into script calls, written back to back on one
// connection (auto-pipelining), matched to their replies in order, with NOSCRIPT recovery,
// replica waits and deadlines. The connection itself is a RedisLink's.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "bucket_calls.h"
#include "locator.h"
#include "redis_call.h"
#include "redis_link.h"
#include "resp_writer.h"
#include "sluice/mutex.h"
#include "sluice/redis_credentials.h"
#include "sluice/redis_store.h"
#include "store_loop.h"

namespace sluice::redis {

// One pipeline and the thread that runs it. Everything but Submit and the readers of atomics
// runs on that thread, so the pipeline's state needs no lock.
class CallPipeline final : public std::enable_shared_from_this<CallPipeline>,
                           private RedisLink::Listener {
 public:
  // Runs on `external` when given (its runner's thread), else on an io_context and thread of
  // its own. `credentials` null: every connection fails with `setup_error`.
  CallPipeline(RedisOptions options, std::shared_ptr<RedisCredentials> credentials,
               std::string setup_error, boost::asio::io_context* external);
  ~CallPipeline();

  // Begins connecting, and starts the own thread if there is one. Every handler holds a
  // reference, so the pipeline lives until its last operation has finished.
  void Start();

  // Fails what is pending. Callable from any thread, the pipeline's own included: a callback
  // may hold the last reference to the store. The own thread, if any, ends; on an external
  // io_context, the shutdown runs there (or never, when that loop has stopped for good).
  void Stop();

  void Submit(std::vector<BucketOp> ops, const RedisCall& call, StoreCallback done)
      SLUICE_EXCLUDES(submit_mutex_);

  bool Ready() const { return ready_.load(std::memory_order_acquire); }
  bool WaitReady(std::chrono::milliseconds timeout) const SLUICE_EXCLUDES(ready_mutex_);
  RedisStoreStats Stats() const;
  std::string LastError() const SLUICE_EXCLUDES(ready_mutex_);
  LatencyCounts RoundTrips() const { return round_trips_.Counts(); }

 private:
  // Script calls written and not yet answered, at most. Past it, checks wait for an answer to go
  // in the next call together: under load each call then carries more checks, and Redis and the
  // gateway each spend less a check; when idle, a check goes at once.
  static constexpr size_t kMaxCallsAwaited = 2;

  // One Submit (one Apply of the store): its operations, and when it gives up. All of them go in
  // one script call.
  struct Submission {
    std::vector<BucketOp> ops;
    StoreCallback done;
    bool asking = false;
    bool all_or_nothing = false;
    std::optional<uint16_t> slot;                     // RedisCall::slot
    Algorithm algorithm = Algorithm::kTokenBucket;    // of every op: one script call
    ReplicaWait wait;                                 // the most any op asks for
    std::optional<std::vector<BucketReply>> replies;  // the script's, while WAIT is pending
    int resends = 0;                                  // after NOSCRIPT
    Clock::TimePoint deadline;
    Clock::TimePoint submitted;
    const Clock* clock = nullptr;             // the pipeline's, which outlives it
    LatencyHistogram* round_trips = nullptr;  // the pipeline's; answered calls are timed
    bool finished = false;

    // The callback goes once called: a finished submission can linger (in the deadline queue until
    // its timer comes) and must not keep what the callback holds alive, the caller's store
    // among it, past a loop that has stopped.
    void Finish(Result<std::vector<BucketReply>> result) {
      if (finished) return;
      finished = true;
      if (result.ok() && round_trips != nullptr) {
        round_trips->Observe(std::chrono::duration<double>(clock->Now() - submitted).count());
      }
      StoreCallback callback = std::move(done);
      done = nullptr;
      callback(std::move(result));
    }
  };
  using SubmissionPtr = std::shared_ptr<Submission>;

  // A command queued for the connection and not yet answered. Replies arrive in the order
  // commands were written.
  struct Pending {
    enum class Kind { kHandshake, kRole, kLoad, kAsking, kBucket, kWait } kind;
    // kBucket: the submissions of the script call, in order; kWait: the submissions written before
    // it asking for it.
    std::vector<SubmissionPtr> submissions = {};
    Algorithm algorithm = Algorithm::kTokenBucket;  // for kLoad: which script it loads
    // Handed to a socket write: from then on the server may have run it, answered or not.
    bool written = false;
  };

  // The soonest deadline on top.
  struct LaterDeadline {
    bool operator()(const SubmissionPtr& a, const SubmissionPtr& b) const;
  };

  // RedisLink::Listener
  void OnConnected() override;
  void OnData() override;
  void OnLost(const std::string& reason) override;

  // Connecting.
  void WriteLoad();
  void OnSetupReply(const Pending& p, const redisReply& reply);
  void OnRoleReply(const redisReply& reply);
  void BecomeReady();
  void Shutdown() SLUICE_EXCLUDES(submit_mutex_);
  // Ready() from here on; when not, `why`.
  void SetReady(bool ready, const std::string& why = "") SLUICE_EXCLUDES(ready_mutex_);
  void OnMoved(const NodeAddress& now);

  // Sending.
  void DrainSubmitted() SLUICE_EXCLUDES(submit_mutex_);
  void Accept(SubmissionPtr submission);
  void Gather(SubmissionPtr submission);
  void SendGathered();
  // One script call for the buckets of `submissions` (one algorithm), written to out_.
  void Send(std::vector<SubmissionPtr> submissions);
  void WriteScriptCall(const std::vector<SubmissionPtr>& submissions);
  using SubmissionIt = std::vector<SubmissionPtr>::const_iterator;
  static void WriteKeys(RespWriter& out, SubmissionIt first, SubmissionIt last);
  static bool SpansSlots(const std::vector<SubmissionPtr>& submissions);
  void WriteWait();
  void Flush();
  // The connection is gone for `reason`: every submission it holds fails. A submission whose call
  // was written hears kDeadlineExceeded, as after a timeout, since the server may have run it: no
  // caller may send it again (the cluster store's retry, a synced count). The rest were never
  // sent: kUnavailable, which a caller may retry.
  void FailAll(const std::string& reason);
  static void FinishEach(const std::vector<SubmissionPtr>& submissions, const Status& error);

  // Receiving.
  void OnReply(Pending& p, const redisReply& reply);
  void OnBucketReply(const Pending& p, const redisReply& reply);
  void OnWaitReply(const Pending& p, const redisReply& reply);
  void Resend(std::vector<SubmissionPtr> submissions, std::string_view error);

  // Deadlines.
  void ArmDeadlineTimer();
  void ExpireSubmissions();
  void TimeOut(Submission& submission);
  std::chrono::milliseconds StallLimit() const;

  bool Up() const { return link_.state() == RedisLink::State::kReady; }

  const RedisOptions options_;
  const std::string function_library_;
  std::shared_ptr<RedisCredentials> credentials_;

  stores::StoreLoop loop_;  // first in, last out: everything below runs on it
  boost::asio::io_context& io_;
  std::shared_ptr<Locator> locator_;
  RedisLink link_;
  ClockTimer deadline_timer_;

  // Shared with submitting threads.
  Mutex submit_mutex_;
  std::vector<SubmissionPtr> submitted_ SLUICE_GUARDED_BY(submit_mutex_);
  bool drain_posted_ SLUICE_GUARDED_BY(submit_mutex_) = false;
  bool stopped_ SLUICE_GUARDED_BY(submit_mutex_) = false;

  // ready_ is an atomic for readers that take no lock; it changes under ready_mutex_, so that a
  // waiter cannot miss the change.
  mutable Mutex ready_mutex_;
  mutable CondVar ready_changed_;  // waited on with ready_mutex_
  std::atomic<bool> ready_{false};
  std::string last_error_ SLUICE_GUARDED_BY(ready_mutex_);

  std::atomic<uint64_t> connects_{0};
  std::atomic<uint64_t> script_loads_{0};
  std::atomic<uint64_t> commands_{0};
  std::atomic<uint64_t> writes_{0};
  std::atomic<uint64_t> timeouts_{0};
  std::atomic<uint64_t> short_waits_{0};
  LatencyHistogram round_trips_;

  // The pipeline's own thread only.
  std::array<std::string, kAlgorithms.size()> script_sha_;  // by algorithm
  std::string out_;                                         // commands waiting for the next write
  std::string writing_buffer_;                              // the write in progress
  bool writing_ = false;
  std::deque<Pending> pending_;
  std::deque<SubmissionPtr> waiting_;  // submitted while connecting
  size_t waiting_ops_ = 0;             // their operations
  std::priority_queue<SubmissionPtr, std::vector<SubmissionPtr>, LaterDeadline> deadlines_;
  std::array<std::vector<SubmissionPtr>, kAlgorithms.size()> gathered_;  // by algorithm, to send
  size_t gathered_ops_ = 0;                                              // their operations
  size_t ops_in_flight_ = 0;
  size_t calls_awaited_ = 0;  // script calls written, not yet answered
  bool reload_queued_ = false;
  std::vector<SubmissionPtr> waiters_;  // sent since the last WAIT, asking for one
  ReplicaWait waiters_need_;            // the most they ask for
  bool timer_armed_ = false;
  Clock::TimePoint timer_expiry_;
  uint64_t timer_seq_ = 0;
  bool idle_since_write_ = true;
  Clock::TimePoint last_write_;
};

// Where `options` say the server is: its address, or the sentinels that know it.
std::shared_ptr<Locator> MakeLocator(const RedisOptions& options,
                                     std::shared_ptr<RedisCredentials> credentials,
                                     boost::asio::io_context& io);

}  // namespace sluice::redis
