#include "sluice/local_counting_store.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gather.h"
#include "local_buckets.h"

namespace sluice {
namespace {

using local::Gather;
using local::kNever;
using local::LocalBucket;
using local::LocalBuckets;
using local::PerMs;
using local::Waiter;

// How often the background thread looks for due syncs and expired leases.
constexpr auto kTickEvery = std::chrono::milliseconds(5);

int64_t MsUntil(double tokens_short, const Limit& limit) {
  return static_cast<int64_t>(std::ceil(tokens_short / PerMs(limit)));
}

// A call to the shared store made for one local bucket, and why.
struct Errand {
  // kOwed: counts flushed while the bucket's sync was out, whose answer changes nothing here.
  enum class Kind { kSync, kLease, kReturn, kOwed } kind;
  std::string key;
};

// Rounds `ms` up to a multiple of `step`: syncs of one interval, and lease expiries, fall on
// the same ticks, so that a tick sends them together and most ticks find nothing due.
int64_t RoundUp(int64_t ms, int64_t step) { return (ms / step + 1) * step; }
constexpr int64_t kLeaseExpiryStepMs = 50;

}  // namespace

struct LocalCountingStore::State : std::enable_shared_from_this<State> {
  explicit State(size_t max_buckets) : buckets(max_buckets) {}

  std::shared_ptr<Store> shared;  // for syncs, follow-up leases and returns
  std::shared_ptr<const Clock> clock;

  std::mutex mutex;
  LocalBuckets buckets;
  int64_t next_due_ms = kNever;  // the soonest sync, lease expiry or bucket to forget
  bool closed = false;           // the owning store is gone: leases that land go back at once
  std::minstd_rand jitter{std::random_device{}()};

  std::atomic<uint64_t> local_decisions{0}, store_calls{0}, sync_calls{0}, lease_calls{0},
      tokens_leased{0}, tokens_returned{0}, sync_failures{0}, refusals{0};

  std::mutex ticker_mutex;
  std::condition_variable ticker_wake;
  bool stopping = false;
  std::thread ticker;

  // Room for the buckets `ops` would make, forgetting settled ones if need be; false when every
  // bucket held owes the store something, and these ops must get the failure policy instead.
  bool MakeRoomFor(const std::vector<BucketOp>& ops) {
    auto local = [](const BucketOp& op) { return op.counting.mode != Counting::kShared; };
    size_t fresh = 0;
    for (auto op = ops.begin(); op != ops.end(); ++op) {
      if (!local(*op) || buckets.Find(op->key) != buckets.end()) continue;
      const bool named_before = std::any_of(ops.begin(), op, [&](const BucketOp& earlier) {
        return local(earlier) && earlier.key == op->key;
      });
      if (!named_before) ++fresh;
    }
    if (buckets.HasRoom(fresh)) return true;
    std::vector<const std::string*> keep;  // the buckets these ops name: not to be forgotten
    for (const BucketOp& op : ops) {
      if (!local(op)) continue;
      if (auto it = buckets.Find(op.key); it != buckets.end()) keep.push_back(&it->first);
    }
    return buckets.MakeRoom(fresh, keep);
  }

  LocalBuckets::Map::iterator BucketFor(const BucketOp& op, int64_t now) {
    auto [it, fresh] = buckets.Emplace(op.key);
    LocalBucket& b = it->second;
    if (fresh) {
      // Never seen: taken as full until the first sync, which is due at once, says otherwise.
      b.tokens = static_cast<double>(op.limit.capacity);
      b.tokens_ms = now;
      b.next_sync_ms = now;
      next_due_ms = now;
    }
    b.limit = op.limit;  // a reloaded rule's new limit applies at once
    b.counting = op.counting;
    b.last_used_ms = now;
    return it;
  }

  // Synced: decides from this gateway's reckoning of the bucket's tokens.
  static BucketReply TakeSynced(LocalBucket& b, int64_t cost, int64_t now) {
    b.tokens = b.RefilledTokens(now);
    b.tokens_ms = now;
    BucketReply reply;
    reply.allowed = cost <= 0 || b.tokens >= static_cast<double>(cost);
    if (reply.allowed) {
      b.tokens =
          std::min(static_cast<double>(b.limit.capacity), b.tokens - static_cast<double>(cost));
      b.unsent += cost;
    } else {
      reply.retry_ms = MsUntil(static_cast<double>(cost) - b.tokens, b.limit);
    }
    reply.remaining = std::max<int64_t>(0, static_cast<int64_t>(std::floor(b.tokens)));
    reply.reset_ms = MsUntil(static_cast<double>(b.limit.capacity) - b.tokens, b.limit);
    return reply;
  }

  // Leased: spends held tokens; false when the check must wait for a lease.
  bool SpendLeased(LocalBucket& b, int64_t cost, BucketReply& reply) {
    if (cost > 0 && b.held < cost) return false;
    b.held -= cost;  // a refund (cost < 0) is held until the lease expires
    if (cost > 0) b.spent_since_lease += cost;
    if (b.held > 0 && b.lease_expires_ms == kNever) SetLeaseExpiry(b, b.last_used_ms);
    reply = {true, b.held, 0, 0};
    return true;
  }

  void SetLeaseExpiry(LocalBucket& b, int64_t now) {
    b.lease_expires_ms = RoundUp(now + b.counting.lease_ttl_ms, kLeaseExpiryStepMs);
    next_due_ms = std::min(next_due_ms, b.lease_expires_ms);
  }

  // The next lease's size: enough for this gateway's rate on the bucket over one lease ttl, at
  // least `need`, at most lease_max_fraction of the capacity (unless `need` is more).
  static int64_t LeaseSize(const LocalBucket& b, int64_t need, int64_t now) {
    const auto cap =
        std::max<int64_t>(1, static_cast<int64_t>(b.counting.lease_max_fraction *
                                                  static_cast<double>(b.limit.capacity)));
    int64_t want = 1;
    if (b.lease_taken_ms >= 0) {
      const double per_ms = static_cast<double>(b.spent_since_lease) /
                            static_cast<double>(std::max<int64_t>(1, now - b.lease_taken_ms));
      want = static_cast<int64_t>(std::ceil(per_ms * static_cast<double>(b.counting.lease_ttl_ms)));
    }
    return std::min(b.limit.capacity, std::max(need, std::min(cap, std::max<int64_t>(1, want))));
  }

  // Starts a lease for the bucket's waiters: an up-to take, sent by the caller.
  BucketOp StartLease(const std::string& key, LocalBucket& b, int64_t now) {
    int64_t need = 0;
    for (const Waiter& w : b.waiters) need += w.cost;
    b.leasing = true;
    const int64_t size = LeaseSize(b, std::min(need, b.limit.capacity), now);
    b.lease_taken_ms = now;
    b.lease_asked = size;
    b.spent_since_lease = 0;
    BucketOp op{key, b.limit, size};
    op.up_to = true;
    return op;
  }

  static BucketReply DryRejection(const LocalBucket& b, int64_t cost, int64_t now) {
    const int64_t short_ms = MsUntil(static_cast<double>(cost - b.held), b.limit);
    return {false, b.held, std::max(b.dry_until_ms - now, short_ms), 0};
  }

  // What a lease's answer does to its bucket: its waiters' answers, and the call to make next
  // (another lease while checks wait and the store had all that was asked; or, once the owning
  // store is gone, the return of what was granted).
  struct LeaseOutcome {
    std::vector<std::pair<Waiter, Result<BucketReply>>> answers;
    std::optional<std::pair<BucketOp, Errand>> next;
  };

  LeaseOutcome OnLease(const std::string& key, const Result<BucketReply>& reply) {
    std::lock_guard lock(mutex);
    auto it = buckets.Find(key);
    if (it == buckets.end()) return {};
    LeaseOutcome out = LeaseLanded(key, it->second, reply);
    buckets.Refile(it);
    return out;
  }

  LeaseOutcome LeaseLanded(const std::string& key, LocalBucket& b,
                           const Result<BucketReply>& reply) {
    LeaseOutcome out;
    b.leasing = false;
    const int64_t now = clock->NowMs();
    if (!reply.ok()) {  // tokens a timed-out lease may have taken are lost: never overspent
      for (Waiter& w : b.waiters) out.answers.emplace_back(std::move(w), reply.status());
      b.waiters.clear();
      return out;
    }
    b.held += reply->granted;
    tokens_leased.fetch_add(static_cast<uint64_t>(reply->granted), std::memory_order_relaxed);
    if (b.held > 0) SetLeaseExpiry(b, now);
    if (!reply->allowed) MarkDry(b, *reply, now);
    size_t served = 0;
    for (; served < b.waiters.size(); ++served) {
      Waiter& w = b.waiters[served];
      BucketReply answer;
      if (!SpendLeased(b, w.cost, answer)) break;
      out.answers.emplace_back(std::move(w), answer);
    }
    b.waiters.erase(b.waiters.begin(), b.waiters.begin() + static_cast<ptrdiff_t>(served));
    if (!b.waiters.empty() && reply->allowed) {  // the store had all asked: ask again
      out.next.emplace(StartLease(key, b, now), Errand{Errand::Kind::kLease, key});
      return out;
    }
    // The shared bucket is dry: the rest wait for it to refill.
    for (Waiter& w : b.waiters)
      out.answers.emplace_back(std::move(w), DryRejection(b, w.cost, now));
    b.waiters.clear();
    if (closed && b.held > 0) out.next.emplace(Return(key, b), Errand{Errand::Kind::kReturn, key});
    return out;
  }

  // Jittered, so that gateways short of tokens do not come back in the same order each time,
  // the first to return always taking what refilled.
  void MarkDry(LocalBucket& b, const BucketReply& reply, int64_t now) {
    const int64_t refill_ms = MsUntil(static_cast<double>(b.lease_asked - reply.granted), b.limit);
    const int64_t wait_ms = std::clamp<int64_t>(refill_ms, reply.retry_ms,
                                                std::max(reply.retry_ms, b.counting.lease_ttl_ms));
    b.dry_until_ms = now + std::uniform_int_distribution<int64_t>(wait_ms / 2, wait_ms)(jitter);
  }

  // Gives back what the bucket holds (a bucket never takes back more than its capacity).
  BucketOp Return(const std::string& key, LocalBucket& b) {
    const int64_t back = std::min(b.held, b.limit.capacity);
    tokens_returned.fetch_add(static_cast<uint64_t>(back), std::memory_order_relaxed);
    b.held = 0;
    b.lease_expires_ms = kNever;
    return {key, b.limit, -back};
  }

  // Sends each op in a call of its own, so that one failing (a cluster shard down) fails no
  // other; a store that pipelines (Redis) still writes them together. `after` runs once every
  // call has answered.
  void Send(std::vector<BucketOp> ops, std::vector<Errand> errands,
            const std::function<void()>& after) {
    if (ops.empty()) {
      if (after) after();
      return;
    }
    auto left = std::make_shared<std::atomic<size_t>>(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      CountCall(errands[i].kind);
      // The state outlives its owner until the answer: a lease that lands then goes back.
      shared->Apply({std::move(ops[i])}, [self = shared_from_this(), errand = errands[i], after,
                                          left](Result<std::vector<BucketReply>> replies) {
        self->OnErrand(errand, replies.ok() ? Result<BucketReply>(replies->front())
                                            : Result<BucketReply>(replies.status()));
        if (left->fetch_sub(1) == 1 && after) after();
      });
    }
  }

  void CountCall(Errand::Kind kind) {
    store_calls.fetch_add(1, std::memory_order_relaxed);
    if (kind == Errand::Kind::kSync) sync_calls.fetch_add(1, std::memory_order_relaxed);
    if (kind == Errand::Kind::kLease) lease_calls.fetch_add(1, std::memory_order_relaxed);
  }

  void OnErrand(const Errand& errand, const Result<BucketReply>& reply) {
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

  void FinishLease(const std::string& key, const Result<BucketReply>& reply) {
    LeaseOutcome out = OnLease(key, reply);
    for (auto& [waiter, answer] : out.answers) {
      if (answer.ok()) {
        waiter.gather->Set(waiter.index, *answer);
      } else {
        waiter.gather->Fail(answer.status());
      }
    }
    if (out.next) Send({std::move(out.next->first)}, {std::move(out.next->second)}, nullptr);
  }

  void OnSync(const std::string& key, const Result<BucketReply>& reply) {
    std::lock_guard lock(mutex);
    auto it = buckets.Find(key);
    if (it == buckets.end()) return;
    LocalBucket& b = it->second;
    b.syncing = false;
    if (reply.ok()) {
      // What the store holds after this sync, less what was admitted here since it was sent.
      b.tokens = static_cast<double>(reply->remaining - b.unsent);
      b.tokens_ms = clock->NowMs();
    } else {
      sync_failures.fetch_add(1, std::memory_order_relaxed);
      // A call that timed out, or that a lost connection cut off, may have been applied:
      // sending it again could count it twice.
      if (reply.status().code() != StatusCode::kDeadlineExceeded) b.unsent += b.sending;
    }
    b.sending = 0;
    buckets.Refile(it);
  }

  // The ops that send due syncs and return expired leases (all of them when `everything`), and
  // forgets buckets that have nothing to send and have been idle long enough to be full again.
  void CollectDue(bool everything, std::vector<BucketOp>& ops, std::vector<Errand>& errands) {
    std::lock_guard lock(mutex);
    const int64_t now = clock->NowMs();
    if (!everything && now < next_due_ms) return;
    next_due_ms = kNever;
    for (auto it = buckets.begin(); it != buckets.end();) {
      LocalBucket& b = it->second;
      if (b.counting.mode == Counting::kSynced) {
        CollectSync(it->first, b, now, everything, ops, errands);
      } else {
        CollectReturn(it->first, b, now, everything, ops, errands);
      }
      if (Forgettable(b, now)) {
        it = buckets.Erase(it);
      } else {
        buckets.Refile(it);
        ++it;
      }
    }
  }

  // Idle for two intervals with nothing owed, held or in flight, and (when synced) reckoned full
  // again: forgetting it then changes no decision. Until then it is looked at again.
  bool Forgettable(const LocalBucket& b, int64_t now) {
    const int64_t idle_ms = 2 * std::max(b.counting.sync_interval_ms, b.counting.lease_ttl_ms);
    const bool quiet = now - b.last_used_ms > idle_ms && b.Settled();
    const bool full = b.counting.mode != Counting::kSynced ||
                      b.RefilledTokens(now) >= static_cast<double>(b.limit.capacity);
    if (quiet && full) return true;
    next_due_ms = std::min(next_due_ms, RoundUp(std::max(now, b.last_used_ms + idle_ms), 100));
    return false;
  }

  void CollectSync(const std::string& key, LocalBucket& b, int64_t now, bool everything,
                   std::vector<BucketOp>& ops, std::vector<Errand>& errands) {
    if (b.syncing) {
      // A flush does not wait for the sync that is out: what was admitted since goes too.
      if (everything && b.unsent != 0) {
        ops.push_back(TakeOwed(key, b));
        errands.push_back({Errand::Kind::kOwed, key});
      }
      return;
    }
    if (!everything && now < b.next_sync_ms) {
      next_due_ms = std::min(next_due_ms, b.next_sync_ms);
      return;
    }
    b.next_sync_ms = RoundUp(now, b.counting.sync_interval_ms);
    // Nothing owed, and either not used since the last sync (the tokens reckoned are as good as
    // any) or sending everything (a flush, the store closing: a call only to learn the tokens
    // would, at exit, be one the stopped loops never answer, keeping this state and the store
    // alive for ever).
    if (b.unsent == 0 && (everything || now - b.last_used_ms > b.counting.sync_interval_ms)) {
      return;
    }
    next_due_ms = std::min(next_due_ms, b.next_sync_ms);
    BucketOp op = TakeOwed(key, b);
    b.sending = op.cost;
    b.syncing = true;
    ops.push_back(std::move(op));
    errands.push_back({Errand::Kind::kSync, key});
  }

  // The op that sends what the bucket owes the store, taken out of `unsent`. A store down for
  // long can leave more owed than a bucket holds; the rest goes next time.
  static BucketOp TakeOwed(const std::string& key, LocalBucket& b) {
    BucketOp op{key, b.limit, std::clamp(b.unsent, -b.limit.capacity, b.limit.capacity)};
    b.unsent -= op.cost;
    op.up_to = op.cost >= 0;  // what was admitted is sent even when the bucket has less
    return op;
  }

  void CollectReturn(const std::string& key, LocalBucket& b, int64_t now, bool everything,
                     std::vector<BucketOp>& ops, std::vector<Errand>& errands) {
    if (b.held <= 0 || b.leasing) return;
    if (!everything && now < b.lease_expires_ms) {
      next_due_ms = std::min(next_due_ms, b.lease_expires_ms);
      return;
    }
    ops.push_back(Return(key, b));
    errands.push_back({Errand::Kind::kReturn, key});
  }

  void SendDue(bool everything, const std::function<void()>& after) {
    std::vector<BucketOp> ops;
    std::vector<Errand> errands;
    CollectDue(everything, ops, errands);
    Send(std::move(ops), std::move(errands), after);
  }

  void RunTicker() {
    std::unique_lock lock(ticker_mutex);
    while (!ticker_wake.wait_for(lock, kTickEvery, [this] { return stopping; })) {
      lock.unlock();
      SendDue(false, nullptr);
      lock.lock();
    }
  }
};

LocalCountingStore::LocalCountingStore(std::shared_ptr<Store> shared,
                                       std::shared_ptr<const Clock> clock, bool background,
                                       size_t max_buckets)
    : state_(std::make_shared<State>(max_buckets)), via_(shared), owner_(true) {
  state_->shared = std::move(shared);
  state_->clock = clock ? std::move(clock) : std::make_shared<SteadyClock>();
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
      std::lock_guard lock(state_->ticker_mutex);
      state_->stopping = true;
    }
    state_->ticker_wake.notify_all();
    state_->ticker.join();
  }
  {
    std::lock_guard lock(state_->mutex);
    state_->closed = true;
  }
  state_->SendDue(true, nullptr);
}

void LocalCountingStore::Apply(std::vector<BucketOp> ops, StoreCallback done) {
  const bool any_local = std::any_of(ops.begin(), ops.end(), [](const BucketOp& op) {
    return op.counting.mode != Counting::kShared;
  });
  if (!any_local) {
    state_->store_calls.fetch_add(1, std::memory_order_relaxed);
    return via_->Apply(std::move(ops), std::move(done));
  }
  if (Status s = ValidateBucketOps(ops); !s.ok()) return done(s);

  auto gather = std::make_shared<Gather>(ops.size(), std::move(done));
  std::vector<std::pair<size_t, BucketReply>> decided;
  std::vector<BucketOp> forward;
  std::vector<size_t> shared_index;  // for each forwarded shared op, its place in `ops`
  std::vector<std::string> leases;   // the buckets of the lease ops after them in `forward`
  {
    std::unique_lock lock(state_->mutex);
    if (!state_->MakeRoomFor(ops)) {
      lock.unlock();
      state_->refusals.fetch_add(1, std::memory_order_relaxed);
      return gather->Fail(Status::ResourceExhausted(
          "the local counts are at their bound (store.max_buckets), every bucket owing the "
          "store counts or leased tokens: a new bucket gets the failure policy until the store "
          "has them"));
    }
    const int64_t now = state_->clock->NowMs();
    std::vector<BucketOp> lease_ops;
    for (size_t i = 0; i < ops.size(); ++i) {
      BucketOp& op = ops[i];
      if (op.counting.mode == Counting::kShared) {
        shared_index.push_back(i);
        forward.push_back(std::move(op));
        continue;
      }
      const auto it = state_->BucketFor(op, now);
      LocalBucket& b = it->second;
      BucketReply reply;
      if (op.counting.mode == Counting::kSynced) {
        decided.emplace_back(i, State::TakeSynced(b, op.cost, now));
      } else if (state_->SpendLeased(b, op.cost, reply)) {
        decided.emplace_back(i, reply);
      } else if (now < b.dry_until_ms) {
        decided.emplace_back(i, State::DryRejection(b, op.cost, now));
      } else {
        b.waiters.push_back({gather, i, op.cost});
        if (!b.leasing) {
          lease_ops.push_back(state_->StartLease(op.key, b, now));
          leases.push_back(op.key);
        }
      }
      state_->buckets.Refile(it);
    }
    for (BucketOp& op : lease_ops) forward.push_back(std::move(op));
  }
  state_->local_decisions.fetch_add(decided.size(), std::memory_order_relaxed);
  for (const auto& [index, reply] : decided) gather->Set(index, reply);
  if (forward.empty()) return gather->Release();

  const size_t shared_count = shared_index.size();
  state_->store_calls.fetch_add(1, std::memory_order_relaxed);
  if (!leases.empty()) state_->lease_calls.fetch_add(1, std::memory_order_relaxed);
  via_->Apply(std::move(forward), [state = state_, gather, shared_index = std::move(shared_index),
                                   leases = std::move(leases),
                                   shared_count](Result<std::vector<BucketReply>> replies) {
    for (size_t j = 0; j < shared_count; ++j) {
      if (replies.ok()) {
        gather->Set(shared_index[j], (*replies)[j]);
      } else {
        gather->Fail(replies.status());
      }
    }
    for (size_t j = 0; j < leases.size(); ++j) {
      state->FinishLease(leases[j], replies.ok() ? Result<BucketReply>((*replies)[shared_count + j])
                                                 : Result<BucketReply>(replies.status()));
    }
  });
  gather->Release();
}

void LocalCountingStore::ApplyAllOrNothing(std::vector<BucketOp> ops, StoreCallback done) {
  const bool any_local = std::any_of(ops.begin(), ops.end(), [](const BucketOp& op) {
    return op.counting.mode != Counting::kShared;
  });
  if (any_local) {
    return done(Status::FailedPrecondition(
        "all-or-nothing cannot take locally counted buckets in one step with shared ones"));
  }
  state_->store_calls.fetch_add(1, std::memory_order_relaxed);
  via_->ApplyAllOrNothing(std::move(ops), std::move(done));
}

void LocalCountingStore::Tick(const std::function<void()>& done) { state_->SendDue(false, done); }

void LocalCountingStore::Flush(const std::function<void()>& done) { state_->SendDue(true, done); }

LocalCountingStats LocalCountingStore::Stats() const {
  auto get = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  const State& s = *state_;
  return {get(s.local_decisions), get(s.store_calls),    get(s.sync_calls),
          get(s.lease_calls),     get(s.tokens_leased),  get(s.tokens_returned),
          get(s.sync_failures),   s.buckets.evictions(), get(s.refusals)};
}

}  // namespace sluice
