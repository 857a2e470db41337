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

constexpr milliseconds kMinBackoff{50};
constexpr milliseconds kMaxBackoff{2000};
// A table of the wrong shape, or a refused password, is not fixed in a hurry.
constexpr milliseconds kSlowBackoff{5000};
// How long past its checks' deadline a statement may still answer before its connection is
// given up on (the server stopped, or the network between).
constexpr milliseconds kGrace{1000};
// The most a deletion of ended windows is given (at least a check's timeout and grace), when its
// interval is longer: a big batch on a busy server takes longer than a check, and a deletion cut
// off is done again by a later round.
constexpr milliseconds kCleanupBudget{10'000};
// Where sluice_quota_set_v2 announces a changed quota.
constexpr std::string_view kChannel = "sluice_quota";
// The fewest ops a batch is given when what waits is shared among idle connections.
constexpr size_t kLeastShare = 64;
// The batch's statement, prepared on every connection.
constexpr const char* kTakeName = "sluice_take";

double Seconds(QuotaPool::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Each check's replies from the rows of its batch's statement, in the batch's order; `sizes`
// holds each check's number of ops.
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
      queue_timer_(loop_.io()),
      cleanup_timer_(loop_.io()) {
  for (size_t i = 0; i < std::max<size_t>(1, options_.pool); ++i) {
    slots_.push_back(std::make_unique<Slot>(loop_.io()));
  }
}

void QuotaPool::Start() {
  Result<std::string> password = CheckedPassword(options_);
  {
    std::lock_guard lock(mutex_);
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
      for (auto& check : slot->batch) {
        if (check->done) check->done(closing);
      }
      slot->batch.clear();
    }
    for (auto& check : self->queue_) check->done(closing);
    self->queue_.clear();
    self->queue_timer_.cancel();
    self->cleanup_timer_.cancel();
    self->ready_.store(false, std::memory_order_release);
  });
  loop_.Finish();
}

void QuotaPool::Submit(std::vector<QuotaOp> ops, QuotaCallback done) {
  auto check = std::make_unique<Check>();
  check->ops = std::move(ops);
  check->done = std::move(done);
  check->deadline = Clock::now() + options_.timeout;
  check->asked_ms = clock_->NowMs();
  asio::post(loop_.io(), [self = shared_from_this(), check = std::move(check)]() mutable {
    self->Enqueue(std::move(check));
  });
}

void QuotaPool::Enqueue(std::unique_ptr<Check> check) {
  auto fail = [&](Status error) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    check->done(std::move(error));
  };
  if (check->ops.empty()) return check->done(std::vector<QuotaReply>{});
  if (Status s = ValidateQuotaOps(check->ops); !s.ok()) return fail(s);
  if (stopping_) return fail(Status::Unavailable("the quota store is closing"));
  Status fatal;
  {
    std::lock_guard lock(mutex_);
    fatal = fatal_;
  }
  // Not under the lock: the callback may ask for LastError.
  if (!fatal.ok()) return fail(std::move(fatal));
  if (!MayAnswer()) return fail(Status::Unavailable(where_ + ": " + LastError()));
  if (queued_ops_ + check->ops.size() > options_.max_queued_ops) {
    return fail(Status::ResourceExhausted(where_ + ": too many quota checks waiting"));
  }
  queued_ops_ += check->ops.size();
  queue_.push_back(std::move(check));
  if (queue_.size() == 1) ArmQueueTimer();
  SchedulePump();
}

bool QuotaPool::MayAnswer() const {
  return std::any_of(slots_.begin(), slots_.end(),
                     [](const auto& slot) { return slot->state != SlotState::kDown; });
}

void QuotaPool::Connect(Slot& slot) {
  if (stopping_) return;
  const unsigned generation = ++slot.generation;
  slot.state = SlotState::kConnecting;
  slot.connection = PgConnection::Create(loop_.io());
  std::string password;
  {
    std::lock_guard lock(mutex_);
    password = password_;
  }
  auto self = shared_from_this();
  slot.connection->Connect(ParamsOf(options_, password), [self, &slot, generation](Status s) {
    if (generation != slot.generation || self->stopping_) return;
    if (!s.ok()) return self->Down(slot, s, slot.connection->refused());
    self->connects_.fetch_add(1, std::memory_order_relaxed);
    self->SetUp(slot, generation);
  });
  slot.timer.expires_after(options_.connect_timeout);
  slot.timer.async_wait([self, &slot, generation](const boost::system::error_code& ec) {
    if (ec || generation != slot.generation || self->stopping_) return;
    if (slot.state == SlotState::kConnecting || slot.state == SlotState::kSettingUp) {
      self->Down(slot, Status::Unavailable("not connected within connect_timeout"));
    }
  });
}

void QuotaPool::SetUp(Slot& slot, unsigned generation) {
  slot.state = SlotState::kSettingUp;
  slot.connection->SetLost([self = shared_from_this(), &slot, generation](const Status& error) {
    if (generation == slot.generation) self->Down(slot, error);
  });
  if (set_up_) return Listen(slot, generation);
  CheckShape(slot, generation, /*created=*/false);
}

void QuotaPool::CheckShape(Slot& slot, unsigned generation, bool created) {
  auto self = shared_from_this();
  slot.connection->Script(std::string(QuotaShapeSql()), [self, &slot, generation, created](
                                                            Result<std::vector<PgResult>> results) {
    if (generation != slot.generation || self->stopping_) return;
    if (!results.ok()) return self->Down(slot, results.status());
    const PGresult* result = results->empty() ? nullptr : results->back().get();
    if (result == nullptr || PQntuples(result) != 1 || PQnfields(result) != 1) {
      return self->Down(slot, Status::StoreError("the quota table's shape cannot be read"));
    }
    if (PQgetisnull(result, 0, 0) != 0) {
      self->set_up_ = true;
      {
        std::lock_guard lock(self->mutex_);
        self->fatal_ = {};
      }
      return self->Listen(slot, generation);
    }
    const std::string problem = PQgetvalue(result, 0, 0);
    if ((problem == "missing" || problem == "outdated") && !created) {
      return slot.connection->Script(
          std::string(QuotaSchemaSql()),
          [self, &slot, generation](Result<std::vector<PgResult>> made) {
            if (generation != slot.generation || self->stopping_) return;
            if (made.ok()) return self->CheckShape(slot, generation, /*created=*/true);
            if (made.status().code() == StatusCode::kUnavailable) {
              return self->Down(slot, made.status());
            }
            const Status error = Status::FailedPrecondition(
                self->where_ + ": cannot create the quota table (" + made.status().message() +
                "); create it with `sluice quota init` as a role that may");
            {
              std::lock_guard lock(self->mutex_);
              self->fatal_ = error;
            }
            self->Down(slot, error);
          });
    }
    const Status error = Status::FailedPrecondition(
        self->where_ + ": " +
        (problem == "missing"    ? "the quota functions are still missing once created"
         : problem == "outdated" ? "the table sluice_quota keeps the first schema's key "
                                   "(bucket, value, window_start) once the schema ran"
                                 : problem));
    {
      std::lock_guard lock(self->mutex_);
      self->fatal_ = error;
    }
    self->Down(slot, error);
  });
}

void QuotaPool::Listen(Slot& slot, unsigned generation) {
  if (listener_) return PrepareTake(slot, generation);
  listener_ = true;
  slot.listening = true;
  auto self = shared_from_this();
  slot.connection->SetNotify([self](std::string_view channel, std::string_view payload) {
    if (channel == kChannel) self->OnNotice(payload);
  });
  slot.connection->Query("LISTEN " + std::string(kChannel), {},
                         [self, &slot, generation](Result<std::vector<PgResult>> results) {
                           if (generation != slot.generation || self->stopping_) return;
                           if (!results.ok()) return self->Down(slot, results.status());
                           // Notices may have gone unheard while nothing listened.
                           self->spent_.Clear();
                           self->PrepareTake(slot, generation);
                         });
}

void QuotaPool::PrepareTake(Slot& slot, unsigned generation) {
  slot.connection->Prepare(
      kTakeName, kTakeStatement,
      [self = shared_from_this(), &slot, generation](Result<std::vector<PgResult>> results) {
        if (generation != slot.generation || self->stopping_) return;
        if (!results.ok()) return self->Down(slot, results.status());
        self->BecomeIdle(slot);
      });
}

void QuotaPool::BecomeIdle(Slot& slot) {
  slot.state = SlotState::kIdle;
  slot.backoff = milliseconds(0);
  slot.timer.cancel();
  SetReady();
  Pump();
}

void QuotaPool::Down(Slot& slot, const Status& error, bool refused) {
  ++slot.generation;
  if (slot.connection) {
    slot.connection->Close();
    slot.connection.reset();
  }
  if (slot.listening) {
    slot.listening = false;
    listener_ = false;
  }
  if (slot.cleaning) {
    // Its callback, which would schedule the next round, is dropped with the connection.
    slot.cleaning = false;
    if (!stopping_) ScheduleCleanup(Jittered(options_.cleanup_interval));
  }
  std::vector<std::unique_ptr<Check>> batch = std::move(slot.batch);
  slot.batch.clear();
  slot.state = SlotState::kDown;
  SetLastError(error.message(), refused);
  SetReady();
  for (auto& check : batch) {
    if (!check->done) continue;
    errors_.fetch_add(1, std::memory_order_relaxed);
    check->done(Status(error.code(),
                       where_ + ": " + error.message() + " (the check may have been counted)"));
  }
  if (!MayAnswer()) {
    // Nothing is on its way up: what waits fails now rather than at its deadline.
    const Status unavailable = Status::Unavailable(where_ + ": " + error.message());
    std::deque<std::unique_ptr<Check>> waiting = std::move(queue_);
    queue_.clear();
    queued_ops_ = 0;
    for (auto& check : waiting) {
      errors_.fetch_add(1, std::memory_order_relaxed);
      check->done(unavailable);
    }
  }
  if (stopping_) return;
  bool slow = refused;
  {
    std::lock_guard lock(mutex_);
    slow = slow || !fatal_.ok();
  }
  slot.backoff = slow ? kSlowBackoff : std::clamp(slot.backoff * 2, kMinBackoff, kMaxBackoff);
  slot.timer.expires_after(Jittered(slot.backoff));
  const unsigned generation = slot.generation;
  slot.timer.async_wait(
      [self = shared_from_this(), &slot, generation](const boost::system::error_code& ec) {
        if (ec || generation != slot.generation || self->stopping_) return;
        self->Connect(slot);
      });
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
  std::vector<std::unique_ptr<Check>> batch;
  size_t ops = 0;
  const auto now = Clock::now();
  while (!queue_.empty()) {
    if (!batch.empty() && ops + queue_.front()->ops.size() > max_ops) break;
    std::unique_ptr<Check> check = std::move(queue_.front());
    queue_.pop_front();
    queued_ops_ -= check->ops.size();
    if (check->deadline <= now) {
      timeouts_.fetch_add(1, std::memory_order_relaxed);
      check->done(Status::DeadlineExceeded(where_ + ": no connection free within the timeout"));
      continue;
    }
    ops += check->ops.size();
    check->spent_changes = spent_.Changes();
    batch.push_back(std::move(check));
  }
  ArmQueueTimer();
  if (batch.empty()) return;
  std::vector<const std::vector<QuotaOp>*> checks;
  checks.reserve(batch.size());
  for (const auto& check : batch) checks.push_back(&check->ops);
  const auto params = TakeParameters(checks, TestClock());
  slot.state = SlotState::kBusy;
  slot.batch = std::move(batch);
  slot.sent = Clock::now();
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
  round_trips_.Observe(Seconds(Clock::now() - slot.sent));
  if (!results.ok() && results.status().code() == StatusCode::kUnavailable) {
    return Down(slot, results.status());  // the connection broke: its checks fail with it
  }
  std::vector<std::unique_ptr<Check>> batch = std::move(slot.batch);
  slot.batch.clear();
  slot.state = SlotState::kIdle;
  slot.timer.cancel();
  std::vector<size_t> sizes;
  sizes.reserve(batch.size());
  for (const auto& check : batch) sizes.push_back(check->ops.size());
  const Result<std::vector<std::vector<QuotaReply>>> replies =
      results.ok() ? BatchReplies(*results, sizes)
                   : Result<std::vector<std::vector<QuotaReply>>>(results.status());
  for (size_t i = 0; i < batch.size(); ++i) {
    Check& check = *batch[i];
    if (!check.done) continue;  // answered already: its deadline passed
    if (!replies.ok()) {
      errors_.fetch_add(1, std::memory_order_relaxed);
      check.done(Status(replies.status().code(), where_ + ": " + replies.status().message()));
      continue;
    }
    for (size_t j = 0; j < check.ops.size(); ++j) {
      spent_.Remember(check.ops[j], (*replies)[i][j], check.asked_ms, check.spent_changes);
    }
    check.done(std::move((*replies)[i]));
  }
  SchedulePump();
}

void QuotaPool::SendCleanup(Slot& slot) {
  cleanup_due_ = false;
  slot.cleaning = true;
  slot.state = SlotState::kBusy;
  slot.sent = Clock::now();
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
  Clock::time_point next = slot.sent + Budget(slot);
  for (const auto& check : slot.batch) {
    if (check->done) next = std::min(next, check->deadline);
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
  const auto now = Clock::now();
  for (const auto& check : slot.batch) {
    if (!check->done || check->deadline > now) continue;
    timeouts_.fetch_add(1, std::memory_order_relaxed);
    QuotaCallback done = std::move(check->done);
    check->done = nullptr;
    done(Status::DeadlineExceeded(where_ + ": no answer within the timeout (the check may have "
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

QuotaPool::Clock::duration QuotaPool::Budget(const Slot& slot) const {
  const milliseconds check = options_.timeout + kGrace;
  if (!slot.cleaning) return check;
  return std::max(check, std::min(options_.cleanup_interval, kCleanupBudget));
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
  const auto now = Clock::now();
  while (!queue_.empty() && queue_.front()->deadline <= now) {
    std::unique_ptr<Check> check = std::move(queue_.front());
    queue_.pop_front();
    queued_ops_ -= check->ops.size();
    timeouts_.fetch_add(1, std::memory_order_relaxed);
    check->done(Status::DeadlineExceeded(where_ + ": no connection free within the timeout"));
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
  std::lock_guard lock(mutex_);
  if (ready) refused_ = false;
  changed_.notify_all();
}

void QuotaPool::SetLastError(const std::string& error, bool refused) {
  std::lock_guard lock(mutex_);
  last_error_ = error;
  refused_ = refused;
  changed_.notify_all();
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
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [this] {
    return ready_.load(std::memory_order_acquire) || !fatal_.ok() || refused_;
  });
  if (ready_.load(std::memory_order_acquire)) return {};
  if (!fatal_.ok()) return fatal_;
  return Status::Unavailable(where_ + ": " +
                             (last_error_.empty() ? "not connected yet" : last_error_));
}

std::string QuotaPool::LastError() const {
  std::lock_guard lock(mutex_);
  return last_error_;
}

bool QuotaPool::Refused() const {
  std::lock_guard lock(mutex_);
  return refused_;
}

Status QuotaPool::ReloadPassword() {
  Result<std::string> password = PostgresPassword(options_);
  if (!password.ok()) return password.status();
  std::lock_guard lock(mutex_);
  password_ = *password;
  return {};
}

PostgresQuotaStats QuotaPool::Stats() const {
  auto get = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  return {get(statements_), get(checks_), get(connects_),
          get(timeouts_),   get(errors_), get(cleaned_)};
}

}  // namespace sluice::postgres
