// The engine of a PostgreSQL quota store: a pool of connections on a thread of its own, takes
// gathered into batches (group commit), deadlines, reconnection, the table's setup, the
// deletion of ended windows, and notices of changed quotas.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/clock_timer.h"
#include "core/spent_quotas.h"
#include "pg_connection.h"
#include "sluice/latency_histogram.h"
#include "sluice/mutex.h"
#include "sluice/postgres_options.h"
#include "sluice/postgres_quota_store.h"
#include "sluice/quota_store.h"
#include "store_loop.h"

namespace sluice::postgres {

// Every member is used on the pool's thread, apart from those that say otherwise.
class QuotaPool : public std::enable_shared_from_this<QuotaPool> {
 public:
  QuotaPool(PostgresOptions options, std::function<std::string()> test_clock);

  // Reads the password and starts the thread and the connections.
  void Start() SLUICE_EXCLUDES(mutex_);
  // Fails what waits with kUnavailable, closes the connections and joins the thread.
  void Stop();

  // From any thread.
  void Submit(std::vector<QuotaOp> ops, QuotaCallback done);
  std::optional<QuotaReply> KnownRejection(const QuotaOp& op) const;
  bool Ready() const { return ready_.load(std::memory_order_acquire); }
  Status WaitReady(std::chrono::milliseconds timeout) const SLUICE_EXCLUDES(mutex_);
  std::string LastError() const SLUICE_EXCLUDES(mutex_);
  bool Refused() const SLUICE_EXCLUDES(mutex_);
  // The password for the connections made from now on.
  void SetPassword(std::string password) SLUICE_EXCLUDES(mutex_);
  PostgresQuotaStats Stats() const;
  LatencyCounts RoundTrips() const { return round_trips_.Counts(); }
  const PostgresOptions& options() const { return options_; }

 private:
  struct PendingTake {
    std::vector<QuotaOp> ops;
    QuotaCallback done;  // empty once answered
    Clock::TimePoint deadline;
    int64_t asked_ms = 0;        // the spent-quota memory's clock at submission
    uint64_t spent_changes = 0;  // the spent-quota memory's Changes() when its batch was sent
  };

  // The batch's statement, prepared on every connection.
  static constexpr const char* kTakeName = "sluice_take";

  enum class SlotState { kDown, kConnecting, kSettingUp, kIdle, kBusy };

  // One connection of the pool.
  struct Slot {
    Slot(boost::asio::io_context& io, std::shared_ptr<const Clock> clock)
        : timer(io, std::move(clock)) {}
    std::shared_ptr<PgConnection> connection;
    SlotState state = SlotState::kDown;
    std::vector<std::unique_ptr<PendingTake>> batch;  // the statement in flight's checks
    Clock::TimePoint sent;
    ClockTimer timer;  // connect timeout, backoff, or the batch's deadline
    std::chrono::milliseconds backoff{0};
    bool listening = false;
    bool cleaning = false;    // the statement in flight deletes ended windows
    unsigned generation = 0;  // raised at each new connection: older callbacks are stale
  };

  void Enqueue(std::unique_ptr<PendingTake> take);
  void Connect(Slot& slot);
  void SetUp(Slot& slot, unsigned generation);
  // Reads what is wrong with the table, if anything (quota_shape.sql), and OnShape acts on it:
  // the schema is made once when the table or functions are missing or outdated.
  void ValidateShape(Slot& slot, unsigned generation, bool created);
  void OnShape(Slot& slot, unsigned generation, bool created,
               const Result<std::vector<PgResult>>& results);
  void CreateSchema(Slot& slot, unsigned generation);
  void Listen(Slot& slot, unsigned generation);
  // Prepares the batch's statement on the connection, then makes it idle.
  void PrepareTake(Slot& slot, unsigned generation);
  void BecomeIdle(Slot& slot);
  // The connection of `slot` is gone (or given up on): its checks in flight fail with `error`, and
  // it connects again after a backoff.
  void Down(Slot& slot, const Status& error, bool refused = false);
  // Sends what waits, a batch per idle connection; the deletion of ended windows when nothing
  // waits.
  void Pump();
  // Pump, once the handlers already queued on the loop have run: the checks submitted meanwhile
  // (a burst of requests, or the next checks of callers that were just answered) then go
  // together in one statement rather than the first of them alone.
  void SchedulePump();
  // Sends the checks at the queue's front, up to `max_ops` ops (at least one check), on `slot`.
  void SendBatch(Slot& slot, size_t max_ops);
  void OnBatch(Slot& slot, unsigned generation, Result<std::vector<PgResult>> results);
  void SendCleanup(Slot& slot);
  // Fails the checks of `slot`'s batch whose deadline has passed, and gives up on a connection
  // that has not answered well past the deadline.
  void OnBatchTimer(Slot& slot, unsigned generation);
  void ArmBatchTimer(Slot& slot);
  // How long `slot`'s statement may go unanswered before its connection is given up on.
  Clock::Duration Budget(const Slot& slot) const;
  // Fails the waiting checks whose deadline has passed.
  void ExpireQueue();
  void ArmQueueTimer();
  void ScheduleCleanup(std::chrono::milliseconds after);
  void OnNotice(std::string_view payload);
  // Whether some connection is up or on its way up: checks may wait for it.
  bool MayAnswer() const;
  void SetReady() SLUICE_EXCLUDES(mutex_);
  void SetLastError(const std::string& error, bool refused) SLUICE_EXCLUDES(mutex_);
  // What no retry fixes (ok: nothing).
  void SetFatal(Status error) SLUICE_EXCLUDES(mutex_);
  Status Fatal() const SLUICE_EXCLUDES(mutex_);
  std::string TestClock() const;
  std::chrono::milliseconds Jittered(std::chrono::milliseconds base);

  const PostgresOptions options_;
  const std::function<std::string()> test_clock_;
  const std::string where_;  // Describe(), for messages
  const std::shared_ptr<const Clock> clock_ = ClockOrSteady(options_.clock);
  SpentQuotas spent_;
  stores::StoreLoop loop_{nullptr};
  std::vector<std::unique_ptr<Slot>> slots_;
  std::deque<std::unique_ptr<PendingTake>> queue_;
  size_t queued_ops_ = 0;
  ClockTimer queue_timer_;
  ClockTimer cleanup_timer_;
  bool cleanup_due_ = false;
  bool pump_scheduled_ = false;
  bool set_up_ = false;  // some connection found (or made) the table in the right shape
  bool listener_ = false;
  bool stopping_ = false;
  std::minstd_rand random_{std::random_device{}()};
  LatencyHistogram round_trips_;

  // Read from any thread.
  std::atomic<bool> ready_{false};
  mutable Mutex mutex_;
  mutable CondVar changed_;  // waited on with mutex_
  std::string password_ SLUICE_GUARDED_BY(mutex_);
  std::string last_error_ SLUICE_GUARDED_BY(mutex_);
  Status fatal_ SLUICE_GUARDED_BY(mutex_);  // what no retry fixes (a table of the wrong shape)
  bool refused_ SLUICE_GUARDED_BY(mutex_) = false;  // the server refused the credentials last time
  std::atomic<uint64_t> statements_{0};
  std::atomic<uint64_t> checks_{0};
  std::atomic<uint64_t> connects_{0};
  std::atomic<uint64_t> timeouts_{0};
  std::atomic<uint64_t> errors_{0};
  std::atomic<uint64_t> cleaned_{0};
  std::atomic<uint64_t> cleanups_{0};
};

}  // namespace sluice::postgres
