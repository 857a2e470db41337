#include "quota_pool.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <charconv>

#include "connection_params.h"
#include "quota_batch.h"
#include "quota_sql.h"

namespace sluice::postgres {

namespace asio = boost::asio;
using std::chrono::milliseconds;

namespace {

// How long past its takes' deadline a statement may still answer before its connection is
// given up on (the server stopped, or the network between).
constexpr milliseconds kGrace{1000};
// The most a deletion of ended windows is given (at least a take's timeout and grace), when its
// interval is longer: a big batch on a busy server takes longer than a take, and a deletion cut
// off is done again by a later round.
constexpr milliseconds kCleanupBudget{10'000};
// The fewest ops a batch is given when what waits is shared among idle connections.
constexpr size_t kLeastShare = 64;

double Seconds(Clock::Duration d) { return std::chrono::duration<double>(d).count(); }

// Each take's replies from the rows of its batch's statement, in the batch's order; `sizes`
// holds each take's number of ops.
Result<std::vector<std::vector<QuotaReply>>> BatchReplies(const std::vector<PgResult>& results,
                                                          const std::vector<size_t>& sizes) {
  const PGresult* result = results.empty() ? nullptr : results.back().get();
  if (result == nullptr || PQnfields(result) != 6) {
    return Status::StoreError("the quota statement answered no rows");
  }
  const Rows rows{static_cast<size_t>(PQntuples(result)), [result](size_t row, size_t column) {
                    const int r = static_cast<int>(row);
                    const int c = static_cast<int>(column);
                    return std::string_view(PQgetvalue(result, r, c),
                                            static_cast<size_t>(PQgetlength(result, r, c)));
                  }};
  return SplitReplies(rows, sizes);
}

}  // namespace

QuotaPool::QuotaPool(PostgresOptions options, std::function<std::string()> test_clock)
    : options_(std::move(options)),
      test_clock_(std::move(test_clock)),
      where_(options_.Describe()),
      spent_(clock_, options_.spent_quotas),
      queue_timer_(loop_.io(), clock_),
      cleanup_timer_(loop_.io(), clock_) {
  for (size_t i = 0; i < std::max<size_t>(1, options_.pool); ++i) {
    slots_.push_back(std::make_unique<Slot>(loop_.io(), clock_));
  }
}

void QuotaPool::Start() {
  Result<std::string> password = CheckedPassword(options_);
  {
    MutexLock lock(&mutex_);
    if (password.ok()) {
      password_ = *password;
    } else {
      fatal_ = Status::FailedPrecondition(password.status().message());
      last_error_ = password.status().message();
    }
  }
  loop_.Start(shared_from_this());
  if (!password.ok()) return;
  asio::post(loop_.io(), [self = shared_from_this()] {
    for (const auto& slot : self->slots_) self->Connect(*slot);
    self->ScheduleCleanup(self->Jittered(self->options_.cleanup_interval));
  });
}

void QuotaPool::Stop() {
  asio::post(loop_.io(), [self = shared_from_this()] {
    self->stopping_ = true;
    const Status closing = Status::Unavailable("the quota store is closing");
    for (const auto& slot : self->slots_) {
      ++slot->generation;
      slot->timer.cancel();
      if (slot->connection) slot->connection->Close();
      slot->connection.reset();
      slot->state = SlotState::kDown;
      for (auto& take : slot->batch) {
        if (take->done) take->done(closing);
      }
      slot->batch.clear();
    }
    for (auto& take : self->queue_) take->done(closing);
    self->queue_.clear();
    self->queue_timer_.cancel();
    self->cleanup_timer_.cancel();
    self->ready_.store(false, std::memory_order_release);
  });
  loop_.Finish();
}

void QuotaPool::Submit(std::vector<QuotaOp> ops, QuotaCallback done) {
  auto take = std::make_unique<PendingTake>();
  take->ops = std::move(ops);
  take->done = std::move(done);
  take->deadline = clock_->Now() + options_.timeout;
  take->asked_ms = clock_->NowMs();
  asio::post(loop_.io(), [self = shared_from_this(), take = std::move(take)]() mutable {
    self->Enqueue(std::move(take));
  });
}

void QuotaPool::Enqueue(std::unique_ptr<PendingTake> take) {
  auto fail = [&](Status error) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    take->done(std::move(error));
  };
  if (take->ops.empty()) return take->done(std::vector<QuotaReply>{});
  if (Status s = ValidateQuotaOps(take->ops); !s.ok()) return fail(s);
  if (stopping_) return fail(Status::Unavailable("the quota store is closing"));
  // Not under the lock: the callback may ask for LastError.
  if (Status fatal = Fatal(); !fatal.ok()) return fail(std::move(fatal));
  if (!MayAnswer()) return fail(Status::Unavailable(where_ + ": " + LastError()));
  if (queued_ops_ + take->ops.size() > options_.max_queued_ops) {
    return fail(Status::ResourceExhausted(where_ + ": too many quota takes waiting"));
  }
  queued_ops_ += take->ops.size();
  queue_.push_back(std::move(take));
  if (queue_.size() == 1) ArmQueueTimer();
  SchedulePump();
}

bool QuotaPool::MayAnswer() const {
  return std::any_of(slots_.begin(), slots_.end(),
                     [](const auto& slot) { return slot->state != SlotState::kDown; });
}

void QuotaPool::SchedulePump() {
  if (pump_scheduled_) return;
  pump_scheduled_ = true;
  asio::post(loop_.io(), [self = shared_from_this()] { self->Pump(); });
}

void QuotaPool::Pump() {
  pump_scheduled_ = false;
  if (stopping_) return;
  size_t idle = std::count_if(slots_.begin(), slots_.end(),
                              [](const auto& slot) { return slot->state == SlotState::kIdle; });
  for (const auto& slot : slots_) {
    if (slot->state != SlotState::kIdle) continue;
    if (!queue_.empty()) {
      // What waits is shared among the idle connections (64 ops each at least, so that a batch
      // stays worth its statement): the server's backends then decide them side by side, one
      // committing while another computes, rather than one backend all of them in turn.
      const size_t share = std::max<size_t>(kLeastShare, (queued_ops_ + idle - 1) / idle);
      SendBatch(*slot, std::min(options_.max_batch_ops, share));
      --idle;
    } else if (cleanup_due_) {
      SendCleanup(*slot);
    }
  }
}

void QuotaPool::SendBatch(Slot& slot, size_t max_ops) {
  std::vector<std::unique_ptr<PendingTake>> batch;
  size_t ops = 0;
  const auto now = clock_->Now();
  while (!queue_.empty()) {
    if (!batch.empty() && ops + queue_.front()->ops.size() > max_ops) break;
    std::unique_ptr<PendingTake> take = std::move(queue_.front());
    queue_.pop_front();
    queued_ops_ -= take->ops.size();
    if (take->deadline <= now) {
      timeouts_.fetch_add(1, std::memory_order_relaxed);
      take->done(Status::DeadlineExceeded(where_ + ": no connection free within the timeout"));
      continue;
    }
    ops += take->ops.size();
    take->spent_changes = spent_.Changes();
    batch.push_back(std::move(take));
  }
  ArmQueueTimer();
  if (batch.empty()) return;
  std::vector<const std::vector<QuotaOp>*> takes;
  takes.reserve(batch.size());
  for (const auto& take : batch) takes.push_back(&take->ops);
  const auto params = TakeParameters(takes, TestClock());
  slot.state = SlotState::kBusy;
  slot.batch = std::move(batch);
  slot.sent = clock_->Now();
  statements_.fetch_add(1, std::memory_order_relaxed);
  checks_.fetch_add(slot.batch.size(), std::memory_order_relaxed);
  const unsigned generation = slot.generation;
  slot.connection->QueryPrepared(
      kTakeName, params,
      [self = shared_from_this(), &slot, generation](Result<std::vector<PgResult>> results) {
        self->OnBatch(slot, generation, std::move(results));
      });
  ArmBatchTimer(slot);
}

void QuotaPool::OnBatch(Slot& slot, unsigned generation, Result<std::vector<PgResult>> results) {
  if (generation != slot.generation || stopping_) return;
  round_trips_.Observe(Seconds(clock_->Now() - slot.sent));
  if (!results.ok() && results.status().code() == StatusCode::kUnavailable) {
    return Down(slot, results.status());  // the connection broke: its takes fail with it
  }
  std::vector<std::unique_ptr<PendingTake>> batch = std::move(slot.batch);
  slot.batch.clear();
  slot.state = SlotState::kIdle;
  slot.timer.cancel();
  std::vector<size_t> sizes;
  sizes.reserve(batch.size());
  for (const auto& take : batch) sizes.push_back(take->ops.size());
  Result<std::vector<std::vector<QuotaReply>>> replies =
      results.ok() ? BatchReplies(*results, sizes)
                   : Result<std::vector<std::vector<QuotaReply>>>(results.status());
  for (size_t i = 0; i < batch.size(); ++i) {
    PendingTake& take = *batch[i];
    if (!take.done) continue;  // answered already: its deadline passed
    if (!replies.ok()) {
      errors_.fetch_add(1, std::memory_order_relaxed);
      take.done(Status(replies.status().code(), where_ + ": " + replies.status().message()));
      continue;
    }
    for (size_t j = 0; j < take.ops.size(); ++j) {
      spent_.Remember(take.ops[j], (*replies)[i][j], take.asked_ms, take.spent_changes);
    }
    take.done(std::move((*replies)[i]));
  }
  SchedulePump();
}

void QuotaPool::SendCleanup(Slot& slot) {
  cleanup_due_ = false;
  slot.cleaning = true;
  slot.state = SlotState::kBusy;
  slot.sent = clock_->Now();
  const unsigned generation = slot.generation;
  const std::string clock = TestClock();
  slot.connection->Query(
      "SELECT sluice_quota_cleanup_v2($1::integer, $2::timestamptz)",
      {std::to_string(options_.cleanup_batch),
       clock.empty() ? std::nullopt : std::optional<std::string>(clock)},
      [self = shared_from_this(), &slot, generation](Result<std::vector<PgResult>> results) {
        if (generation != slot.generation || self->stopping_) return;
        if (!results.ok() && results.status().code() == StatusCode::kUnavailable) {
          return self->Down(slot, results.status());  // it schedules the next round
        }
        slot.cleaning = false;
        slot.state = SlotState::kIdle;
        slot.timer.cancel();
        int64_t deleted = 0;
        if (results.ok() && !results->empty() && PQntuples(results->back().get()) == 1) {
          const std::string_view text = PQgetvalue(results->back().get(), 0, 0);
          std::from_chars(text.data(), text.data() + text.size(), deleted);
        }
        if (deleted > 0) self->cleaned_.fetch_add(deleted, std::memory_order_relaxed);
        if (results.ok()) self->cleanups_.fetch_add(1, std::memory_order_relaxed);
        // A full batch leaves more to delete, at the next moment nothing waits; otherwise (done,
        // another gateway deleting, or an error) the next round.
        if (deleted >= static_cast<int64_t>(self->options_.cleanup_batch)) {
          self->cleanup_due_ = true;
        } else {
          self->ScheduleCleanup(self->Jittered(self->options_.cleanup_interval));
        }
        self->Pump();
      });
  ArmBatchTimer(slot);
}

void QuotaPool::ArmBatchTimer(Slot& slot) {
  Clock::TimePoint next = slot.sent + Budget(slot);
  for (const auto& take : slot.batch) {
    if (take->done) next = std::min(next, take->deadline);
  }
  slot.timer.expires_at(next);
  slot.timer.async_wait([self = shared_from_this(), &slot,
                         generation = slot.generation](const boost::system::error_code& ec) {
    if (ec || generation != slot.generation || self->stopping_) return;
    self->OnBatchTimer(slot, generation);
  });
}

void QuotaPool::OnBatchTimer(Slot& slot, unsigned generation) {
  if (slot.state != SlotState::kBusy || generation != slot.generation) return;
  const auto now = clock_->Now();
  for (const auto& take : slot.batch) {
    if (!take->done || take->deadline > now) continue;
    timeouts_.fetch_add(1, std::memory_order_relaxed);
    QuotaCallback done = std::move(take->done);
    take->done = nullptr;
    done(Status::DeadlineExceeded(where_ + ": no answer within the timeout (the take may have "
                                           "been counted)"));
  }
  if (now >= slot.sent + Budget(slot)) {
    const auto budget = std::chrono::duration_cast<milliseconds>(Budget(slot));
    return Down(
        slot, Status::Unavailable("no answer to a statement for " + std::to_string(budget.count()) +
                                  " ms; connecting again"));
  }
  ArmBatchTimer(slot);
}

Clock::Duration QuotaPool::Budget(const Slot& slot) const {
  const milliseconds take = options_.timeout + kGrace;
  if (!slot.cleaning) return take;
  return std::max(take, std::min(options_.cleanup_interval, kCleanupBudget));
}

void QuotaPool::ArmQueueTimer() {
  if (queue_.empty()) {
    queue_timer_.cancel();
    return;
  }
  queue_timer_.expires_at(queue_.front()->deadline);
  queue_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->stopping_) return;
    self->ExpireQueue();
  });
}

void QuotaPool::ExpireQueue() {
  const auto now = clock_->Now();
  while (!queue_.empty() && queue_.front()->deadline <= now) {
    std::unique_ptr<PendingTake> take = std::move(queue_.front());
    queue_.pop_front();
    queued_ops_ -= take->ops.size();
    timeouts_.fetch_add(1, std::memory_order_relaxed);
    take->done(Status::DeadlineExceeded(where_ + ": no connection free within the timeout"));
  }
  ArmQueueTimer();
}

void QuotaPool::ScheduleCleanup(milliseconds after) {
  cleanup_timer_.expires_after(after);
  cleanup_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->stopping_) return;
    self->cleanup_due_ = true;
    self->Pump();
  });
}

void QuotaPool::OnNotice(std::string_view payload) {
  if (auto quota = ChangedQuota(payload)) spent_.Forget(quota->first, quota->second);
}

void QuotaPool::SetReady() {
  const bool ready = set_up_ && std::any_of(slots_.begin(), slots_.end(), [](const auto& slot) {
                       return slot->state == SlotState::kIdle || slot->state == SlotState::kBusy;
                     });
  if (ready_.exchange(ready, std::memory_order_acq_rel) == ready) return;
  MutexLock lock(&mutex_);
  if (ready) refused_ = false;
  changed_.SignalAll();
}

void QuotaPool::SetLastError(const std::string& error, bool refused) {
  MutexLock lock(&mutex_);
  last_error_ = error;
  refused_ = refused;
  changed_.SignalAll();
}

void QuotaPool::SetFatal(Status error) {
  MutexLock lock(&mutex_);
  fatal_ = std::move(error);
}

Status QuotaPool::Fatal() const {
  MutexLock lock(&mutex_);
  return fatal_;
}

std::string QuotaPool::TestClock() const { return test_clock_ ? test_clock_() : std::string(); }

milliseconds QuotaPool::Jittered(milliseconds base) {
  if (base.count() <= 1) return base;
  std::uniform_int_distribution<int64_t> spread(base.count() / 2, base.count());
  return milliseconds(spread(random_));
}

std::optional<QuotaReply> QuotaPool::KnownRejection(const QuotaOp& op) const {
  return spent_.Rejection(op);
}

Status QuotaPool::WaitReady(milliseconds timeout) const {
  // The caller waits in real time, whatever clock the pool's own timeouts are on.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(&mutex_);
  while (!ready_.load(std::memory_order_acquire) && fatal_.ok() && !refused_) {
    if (!changed_.WaitUntil(&mutex_, deadline)) break;
  }
  if (ready_.load(std::memory_order_acquire)) return {};
  if (!fatal_.ok()) return fatal_;
  return Status::Unavailable(where_ + ": " +
                             (last_error_.empty() ? "not connected yet" : last_error_));
}

std::string QuotaPool::LastError() const {
  MutexLock lock(&mutex_);
  return last_error_;
}

bool QuotaPool::Refused() const {
  MutexLock lock(&mutex_);
  return refused_;
}

void QuotaPool::SetPassword(std::string password) {
  MutexLock lock(&mutex_);
  password_ = std::move(password);
}

PostgresQuotaStats QuotaPool::Stats() const {
  auto get = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  return {get(statements_), get(checks_),  get(connects_), get(timeouts_),
          get(errors_),     get(cleaned_), get(cleanups_)};
}

}  // namespace sluice::postgres
