// The pool's connections brought up (connect, the table's shape, LISTEN, the prepared take)
// and down (their takes failed, a backoff, connect again): QuotaPool's connection lifecycle.
#include <algorithm>
#include <string>

#include "connection_params.h"
#include "quota_batch.h"
#include "quota_pool.h"
#include "quota_sql.h"

namespace sluice::postgres {

using std::chrono::milliseconds;

namespace {

constexpr milliseconds kMinBackoff{50};
constexpr milliseconds kMaxBackoff{2000};
// A table of the wrong shape, or a refused password, is not fixed in a hurry.
constexpr milliseconds kSlowBackoff{5000};
// Where sluice_quota_set_v2 announces a changed quota.
constexpr std::string_view kChannel = "sluice_quota";

}  // namespace

void QuotaPool::Connect(Slot& slot) {
  if (stopping_) return;
  const unsigned generation = ++slot.generation;
  slot.state = SlotState::kConnecting;
  slot.connection = PgConnection::Create(loop_.io());
  std::string password;
  {
    MutexLock lock(&mutex_);
    password = password_;
  }
  auto self = shared_from_this();
  slot.connection->Connect(ParamsOf(options_, password),
                           [self, &slot, generation](const Status& s) {
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
  ValidateShape(slot, generation, /*created=*/false);
}

void QuotaPool::ValidateShape(Slot& slot, unsigned generation, bool created) {
  slot.connection->Script(std::string(QuotaShapeSql()),
                          [self = shared_from_this(), &slot, generation,
                           created](const Result<std::vector<PgResult>>& results) {
                            if (generation != slot.generation || self->stopping_) return;
                            self->OnShape(slot, generation, created, results);
                          });
}

namespace {

// What quota_shape.sql's `problem` means, for the operator: why no retry will fix it.
std::string ShapeProblem(const std::string& problem) {
  if (problem == "missing") return "the quota functions are still missing once created";
  if (problem == "outdated") {
    return "the table sluice_quota keeps the first schema's key (bucket, value, window_start) "
           "once the schema ran";
  }
  return problem;
}

}  // namespace

void QuotaPool::OnShape(Slot& slot, unsigned generation, bool created,
                        const Result<std::vector<PgResult>>& results) {
  if (!results.ok()) return Down(slot, results.status());
  const PGresult* result = results->empty() ? nullptr : results->back().get();
  if (result == nullptr || PQntuples(result) != 1 || PQnfields(result) != 1) {
    return Down(slot, Status::StoreError("the quota table's shape cannot be read"));
  }
  if (PQgetisnull(result, 0, 0) != 0) {
    set_up_ = true;
    SetFatal({});
    return Listen(slot, generation);
  }
  const std::string problem = PQgetvalue(result, 0, 0);
  if ((problem == "missing" || problem == "outdated") && !created) {
    return CreateSchema(slot, generation);
  }
  const Status error = Status::FailedPrecondition(where_ + ": " + ShapeProblem(problem));
  SetFatal(error);
  Down(slot, error);
}

void QuotaPool::CreateSchema(Slot& slot, unsigned generation) {
  slot.connection->Script(
      std::string(QuotaSchemaSql()),
      [self = shared_from_this(), &slot, generation](const Result<std::vector<PgResult>>& made) {
        if (generation != slot.generation || self->stopping_) return;
        if (made.ok()) return self->ValidateShape(slot, generation, /*created=*/true);
        if (made.status().code() == StatusCode::kUnavailable) {
          return self->Down(slot, made.status());
        }
        const Status error = Status::FailedPrecondition(
            self->where_ + ": cannot create the quota table (" + made.status().message() +
            "); create it with `sluice quota init` as a role that may");
        self->SetFatal(error);
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
                         [self, &slot, generation](const Result<std::vector<PgResult>>& results) {
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
      [self = shared_from_this(), &slot, generation](const Result<std::vector<PgResult>>& results) {
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
  std::vector<std::unique_ptr<PendingTake>> batch = std::move(slot.batch);
  slot.batch.clear();
  slot.state = SlotState::kDown;
  SetLastError(error.message(), refused);
  SetReady();
  for (auto& take : batch) {
    if (!take->done) continue;
    errors_.fetch_add(1, std::memory_order_relaxed);
    take->done(Status(error.code(),
                      where_ + ": " + error.message() + " (the take may have been counted)"));
  }
  if (!MayAnswer()) {
    // Nothing is on its way up: what waits fails now rather than at its deadline.
    const Status unavailable = Status::Unavailable(where_ + ": " + error.message());
    std::deque<std::unique_ptr<PendingTake>> waiting = std::move(queue_);
    queue_.clear();
    queued_ops_ = 0;
    for (auto& take : waiting) {
      errors_.fetch_add(1, std::memory_order_relaxed);
      take->done(unavailable);
    }
  }
  if (stopping_) return;
  const bool slow = refused || !Fatal().ok();
  slot.backoff = slow ? kSlowBackoff : std::clamp(slot.backoff * 2, kMinBackoff, kMaxBackoff);
  slot.timer.expires_after(Jittered(slot.backoff));
  const unsigned generation = slot.generation;
  slot.timer.async_wait(
      [self = shared_from_this(), &slot, generation](const boost::system::error_code& ec) {
        if (ec || generation != slot.generation || self->stopping_) return;
        self->Connect(slot);
      });
}

}  // namespace sluice::postgres
