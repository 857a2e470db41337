#include "sluice/local_counting_store.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "leased_counts.h"
#include "local_buckets.h"
#include "reply_join.h"
#include "sluice/mutex.h"
#include "synced_counts.h"

namespace sluice {
namespace {

using local::Counters;
using local::Errand;
using local::Errands;
using local::LeasedCounts;
using local::LocalBucket;
using local::LocalBuckets;
using local::SyncedCounts;
using stores::ReplyJoin;

// How often the background thread looks for due syncs and expired leases.
constexpr auto kTickEvery = std::chrono::milliseconds(5);

bool CountsLocally(const BucketOp& op) { return op.counting.mode != Counting::kShared; }

bool AnyLocal(const std::vector<BucketOp>& ops) {
  return std::any_of(ops.begin(), ops.end(), CountsLocally);
}

// Ops of one kind taken out of an Apply's, each with the position it had there.
struct OpsPart {
  std::vector<BucketOp> ops;
  std::vector<size_t> positions;

  void Add(BucketOp op, size_t position) {
    ops.push_back(std::move(op));
    positions.push_back(position);
  }
};

// An Apply's ops split by where they are decided: by the shared store, or here.
struct ModeSplit {
  OpsPart shared;
  OpsPart local;
};

ModeSplit SplitByMode(std::vector<BucketOp> ops) {
  ModeSplit split;
  for (size_t i = 0; i < ops.size(); ++i) {
    (CountsLocally(ops[i]) ? split.local : split.shared).Add(std::move(ops[i]), i);
  }
  return split;
}

// What the local rooms made of an Apply's local ops: the replies decided here, by position, and
// the leases its waiting ops need.
struct LocalAnswers {
  std::vector<std::pair<size_t, BucketReply>> decided;
  Errands leases;
};

}  // namespace

struct LocalCountingStore::State : std::enable_shared_from_this<State> {
  explicit State(size_t max_buckets) : buckets(max_buckets) {}

  std::shared_ptr<Store> shared;  // for syncs, follow-up leases and returns
  std::shared_ptr<const Clock> clock;
  Counters counters;

  Mutex mutex;
  LocalBuckets buckets SLUICE_GUARDED_BY(mutex);
  SyncedCounts synced SLUICE_GUARDED_BY(mutex){&buckets, &counters};
  LeasedCounts leased SLUICE_GUARDED_BY(mutex){&buckets, &counters};
  bool closed SLUICE_GUARDED_BY(mutex) =
      false;  // the owner is gone: leases that land go back at once

  Mutex ticker_mutex;
  CondVar ticker_wake;  // waited on with ticker_mutex
  bool stopping SLUICE_GUARDED_BY(ticker_mutex) = false;
  std::thread ticker;

  // Decides `local` (every op synced or leased) here; the ops that must wait for a lease wait
  // with `join`. kResourceExhausted when the buckets they need cannot be held.
  Result<LocalAnswers> Decide(const OpsPart& local, const std::shared_ptr<ReplyJoin>& join)
      SLUICE_EXCLUDES(mutex) {
    MutexLock lock(&mutex);
    if (!buckets.MakeRoomFor(local.ops)) {
      return Status::ResourceExhausted(
          "the local counts are at their bound (store.max_buckets), every bucket owing the "
          "store counts or leased tokens: a new bucket gets the failure policy until the store "
          "has them");
    }
    const int64_t now = clock->NowMs();
    LocalAnswers answers;
    for (size_t k = 0; k < local.ops.size(); ++k) {
      const BucketOp& op = local.ops[k];
      const size_t position = local.positions[k];
      const auto it = buckets.Use(op, now);
      LocalBucket& b = it->second;
      if (op.counting.mode == Counting::kSynced) {
        answers.decided.emplace_back(position, SyncedCounts::Take(b, op.cost, now));
      } else if (auto reply =
                     leased.Take(op.key, b, {join, position, op.cost}, now, answers.leases)) {
        answers.decided.emplace_back(position, *reply);
      }
      buckets.Refile(it);
    }
    return answers;
  }

  // Sends `shared` (an Apply's shared ops) and `leases` in one call through `via`: the shared
  // ops' replies go to `join`, the leases' to their waiters.
  void Forward(Store& via, OpsPart shared, Errands leases, const std::shared_ptr<ReplyJoin>& join) {
    counters.store_calls.fetch_add(1, std::memory_order_relaxed);
    if (!leases.ops.empty()) counters.lease_calls.fetch_add(1, std::memory_order_relaxed);
    std::vector<BucketOp> ops = std::move(shared.ops);
    const size_t shared_count = ops.size();
    for (BucketOp& op : leases.ops) ops.push_back(std::move(op));
    via.Apply(std::move(ops), [self = shared_from_this(), join,
                               positions = std::move(shared.positions),
                               errands = std::move(leases.errands),
                               shared_count](Result<std::vector<BucketReply>> replies) {
      for (size_t j = 0; j < shared_count; ++j) {
        if (replies.ok()) {
          join->Set(positions[j], (*replies)[j]);
        } else {
          join->Fail(replies.status());
        }
      }
      for (size_t j = 0; j < errands.size(); ++j) {
        self->FinishLease(errands[j].key, replies.ok()
                                              ? Result<BucketReply>((*replies)[shared_count + j])
                                              : Result<BucketReply>(replies.status()));
      }
    });
  }

  // Sends each op in a call of its own, so that one failing (a cluster shard down) fails no
  // other; a store that pipelines (Redis) still writes them together. `after` runs once every
  // call has answered.
  void Send(Errands calls, const std::function<void()>& after) {
    if (calls.ops.empty()) {
      if (after) after();
      return;
    }
    auto left = std::make_shared<std::atomic<size_t>>(calls.ops.size());
    for (size_t i = 0; i < calls.ops.size(); ++i) {
      CountCall(calls.errands[i].kind);
      // The state outlives its owner until the answer: a lease that lands then goes back.
      shared->Apply({std::move(calls.ops[i])},
                    [self = shared_from_this(), errand = calls.errands[i], after,
                     left](Result<std::vector<BucketReply>> replies) {
                      self->OnErrand(errand, replies.ok() ? Result<BucketReply>(replies->front())
                                                          : Result<BucketReply>(replies.status()));
                      if (left->fetch_sub(1) == 1 && after) after();
                    });
    }
  }

  void CountCall(Errand::Kind kind) {
    counters.store_calls.fetch_add(1, std::memory_order_relaxed);
    if (kind == Errand::Kind::kSync) counters.sync_calls.fetch_add(1, std::memory_order_relaxed);
    if (kind == Errand::Kind::kLease) counters.lease_calls.fetch_add(1, std::memory_order_relaxed);
  }

  void OnErrand(const Errand& errand, const Result<BucketReply>& reply) SLUICE_EXCLUDES(mutex) {
    switch (errand.kind) {
      case Errand::Kind::kSync:
        return OnSync(errand.key, reply);
      case Errand::Kind::kLease:
        return FinishLease(errand.key, reply);
      case Errand::Kind::kReturn:  // tokens not given back are lost here, never overspent
      case Errand::Kind::kOwed:    // the sync that was out sets the tokens when it answers
        return;
    }
  }

  // A lease's answer: its waiters hear (outside the lock: an answer may run a caller's
  // callback), and the call it leads to goes.
  void FinishLease(const std::string& key, const Result<BucketReply>& reply)
      SLUICE_EXCLUDES(mutex) {
    LeasedCounts::Landing landing;
    {
      MutexLock lock(&mutex);
      auto it = buckets.Find(key);
      if (it == buckets.end()) return;
      landing = leased.Landed(key, it->second, reply, clock->NowMs(), closed);
      buckets.Refile(it);
    }
    for (auto& [waiter, answer] : landing.answers) {
      if (answer.ok()) {
        waiter.join->Set(waiter.position, *answer);
      } else {
        waiter.join->Fail(answer.status());
      }
    }
    Send(std::move(landing.next), nullptr);
  }

  void OnSync(const std::string& key, const Result<BucketReply>& reply) SLUICE_EXCLUDES(mutex) {
    MutexLock lock(&mutex);
    auto it = buckets.Find(key);
    if (it == buckets.end()) return;
    synced.Landed(it->second, reply, clock->NowMs());
    buckets.Refile(it);
  }

  // The calls that send due syncs and return expired leases (all of them when `everything`),
  // and forgets buckets that have nothing to send and have been idle long enough to be full
  // again.
  Errands CollectDue(bool everything) SLUICE_EXCLUDES(mutex) {
    Errands due;
    MutexLock lock(&mutex);
    const int64_t now = clock->NowMs();
    if (!everything && now < buckets.next_due_ms()) return due;
    buckets.ClearDue();
    for (auto it = buckets.begin(); it != buckets.end();) {
      LocalBucket& b = it->second;
      if (b.counting.mode == Counting::kSynced) {
        synced.Collect(it->first, b, now, everything, due);
      } else {
        leased.Collect(it->first, b, now, everything, due);
      }
      if (Forgettable(b, now)) {
        it = buckets.Erase(it);
      } else {
        buckets.Refile(it);
        ++it;
      }
    }
    return due;
  }

  // Idle for two intervals with nothing owed, held or in flight, and (when synced) reckoned full
  // again: forgetting it then changes no decision. Until then it is looked at again.
  bool Forgettable(const LocalBucket& b, int64_t now) SLUICE_REQUIRES(mutex) {
    const int64_t idle_ms = 2 * std::max(b.counting.sync_interval_ms, b.counting.lease_ttl_ms);
    const bool quiet = now - b.last_used_ms > idle_ms && b.Settled();
    const bool full = b.counting.mode != Counting::kSynced ||
                      b.RefilledTokens(now) >= static_cast<double>(b.limit.capacity);
    if (quiet && full) return true;
    buckets.DueAt(local::RoundUp(std::max(now, b.last_used_ms + idle_ms), 100));
    return false;
  }

  void SendDue(bool everything, const std::function<void()>& after) SLUICE_EXCLUDES(mutex) {
    Send(CollectDue(everything), after);
  }

  void RunTicker() SLUICE_EXCLUDES(ticker_mutex) {
    ticker_mutex.Lock();
    while (!stopping) {
      ticker_wake.WaitFor(&ticker_mutex, kTickEvery);
      if (stopping) break;
      // Not under ticker_mutex: the store's destructor takes it to stop this thread.
      ticker_mutex.Unlock();
      SendDue(false, nullptr);
      ticker_mutex.Lock();
    }
    ticker_mutex.Unlock();
  }

  uint64_t Evictions() SLUICE_EXCLUDES(mutex) {
    MutexLock lock(&mutex);
    return buckets.evictions();
  }
};

LocalCountingStore::LocalCountingStore(std::shared_ptr<Store> shared,
                                       std::shared_ptr<const Clock> clock, bool background,
                                       size_t max_buckets)
    : state_(std::make_shared<State>(max_buckets)), via_(shared), owner_(true) {
  state_->shared = std::move(shared);
  state_->clock = ClockOrSteady(std::move(clock));
  if (background) state_->ticker = std::thread([state = state_.get()] { state->RunTicker(); });
}

LocalCountingStore::LocalCountingStore(std::shared_ptr<State> state, std::shared_ptr<Store> via)
    : state_(std::move(state)), via_(std::move(via)), owner_(false) {}

std::shared_ptr<LocalCountingStore> LocalCountingStore::Through(
    std::shared_ptr<Store> shared) const {
  return std::shared_ptr<LocalCountingStore>(new LocalCountingStore(state_, std::move(shared)));
}

LocalCountingStore::~LocalCountingStore() {
  if (!owner_) return;
  if (state_->ticker.joinable()) {
    {
      MutexLock lock(&state_->ticker_mutex);
      state_->stopping = true;
    }
    state_->ticker_wake.SignalAll();
    state_->ticker.join();
  }
  {
    MutexLock lock(&state_->mutex);
    state_->closed = true;
  }
  state_->SendDue(true, nullptr);
}

// The ops split by mode; the local ones decided here (or waiting for a lease), the shared ones
// and the leases sent in one call; their replies joined in the ops' order.
void LocalCountingStore::Apply(std::vector<BucketOp> ops, StoreCallback done) {
  if (!AnyLocal(ops)) {
    state_->counters.store_calls.fetch_add(1, std::memory_order_relaxed);
    return via_->Apply(std::move(ops), std::move(done));
  }
  if (Status s = ValidateBucketOps(ops); !s.ok()) return done(s);

  // A part for each op, and one for this function's hold until every op is handed out; a
  // failure answers at once, since a caller's check fails as a whole.
  auto join = std::make_shared<ReplyJoin>(ops.size(), ops.size() + 1,
                                          ReplyJoin::OnError::kAnswerAtOnce, std::move(done));
  ModeSplit split = SplitByMode(std::move(ops));
  Result<LocalAnswers> local = state_->Decide(split.local, join);
  if (!local.ok()) {
    state_->counters.refusals.fetch_add(1, std::memory_order_relaxed);
    return join->Fail(local.status());
  }
  state_->counters.local_decisions.fetch_add(local->decided.size(), std::memory_order_relaxed);
  for (const auto& [position, reply] : local->decided) join->Set(position, reply);
  if (!split.shared.ops.empty() || !local->leases.ops.empty()) {
    state_->Forward(*via_, std::move(split.shared), std::move(local->leases), join);
  }
  join->Release();
}

void LocalCountingStore::ApplyAllOrNothing(std::vector<BucketOp> ops, StoreCallback done) {
  if (AnyLocal(ops)) {
    return done(Status::FailedPrecondition(
        "all-or-nothing cannot take locally counted buckets in one step with shared ones"));
  }
  state_->counters.store_calls.fetch_add(1, std::memory_order_relaxed);
  via_->ApplyAllOrNothing(std::move(ops), std::move(done));
}

void LocalCountingStore::Tick(const std::function<void()>& done) { state_->SendDue(false, done); }

void LocalCountingStore::Flush(const std::function<void()>& done) { state_->SendDue(true, done); }

LocalCountingStats LocalCountingStore::Stats() const {
  auto get = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  const Counters& c = state_->counters;
  return {get(c.local_decisions), get(c.store_calls),   get(c.sync_calls),
          get(c.lease_calls),     get(c.tokens_leased), get(c.tokens_returned),
          get(c.sync_failures),   state_->Evictions(),  get(c.refusals)};
}

}  // namespace sluice
