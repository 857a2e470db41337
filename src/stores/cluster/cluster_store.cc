#include "sluice/cluster_store.h"

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <charconv>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include "common/clock_timer.h"
#include "credentials_or_load.h"
#include "key_slot.h"
#include "redis_call.h"
#include "reply_join.h"
#include "slot_map_reader.h"
#include "sluice/mutex.h"
#include "store_loop.h"
#include "topology.h"

namespace sluice {

namespace asio = boost::asio;
using std::chrono::milliseconds;

namespace {

bool OneSlot(const std::vector<BucketOp>& ops) {
  const uint16_t slot = KeySlot(ops.front().key);
  return std::all_of(ops.begin(), ops.end(),
                     [slot](const BucketOp& op) { return KeySlot(op.key) == slot; });
}

// `options` with a clock: the process's steady clock unless one is given.
ClusterOptions WithClock(ClusterOptions options) {
  options.clock = ClockOrSteady(std::move(options.clock));
  return options;
}

}  // namespace

class ClusterStore::Impl : public std::enable_shared_from_this<Impl> {
 public:
  // `credentials` null: no node is reached, and checks fail with `setup_error`.
  Impl(ClusterOptions options, std::shared_ptr<RedisCredentials> credentials,
       std::string setup_error, asio::io_context* external)
      : options_(WithClock(std::move(options))),
        credentials_(std::move(credentials)),
        setup_error_(std::move(setup_error)),
        loop_(external),
        io_(loop_.io()) {}

  // Starts reading the slot map, and the own thread if there is one.
  void Start() {
    if (credentials_) {
      reader_ = std::make_shared<cluster::SlotMapReader>(
          io_, options_, credentials_,
          [weak = weak_from_this()](const std::vector<cluster::SlotRange>& ranges) {
            if (auto self = weak.lock()) self->AdoptSlotMap(ranges);
          });
      asio::post(io_, [self = shared_from_this()] { self->reader_->Start(); });
    }
    loop_.Start(shared_from_this());
  }

  // Fails what is pending (on the io_context) and ends the own thread. Callable from any
  // thread.
  void Stop() {
    asio::post(io_, [self = shared_from_this()] { self->Shutdown(); });
    loop_.Finish();
  }

  void Submit(std::vector<BucketOp> ops, bool all_or_nothing, StoreCallback done) {
    if (ops.empty()) return done(std::vector<BucketReply>{});
    if (Status s = ValidateBucketOps(ops); !s.ok()) return done(s);
    if (all_or_nothing && !OneSlot(ops)) {
      return done(Status::FailedPrecondition(
          "all-or-nothing needs every key in one slot; give the rules' keys one hash tag"));
    }
    auto apply = std::make_shared<SplitApply>();
    apply->all_or_nothing = all_or_nothing;
    apply->deadline = options_.clock->Now() + options_.timeout;
    std::vector<CallPtr> calls = SplitBySlot(apply, ops);
    apply->ops = std::move(ops);
    // A failure fails the whole Apply at once: a slot's error is the caller's, whatever the
    // other slots answer.
    apply->join = std::make_shared<stores::ReplyJoin>(apply->ops.size(), calls.size(),
                                                      stores::ReplyJoin::OnError::kAnswerAtOnce,
                                                      std::move(done));
    asio::post(io_, [self = shared_from_this(), calls = std::move(calls)] { self->Begin(calls); });
  }

  bool Ready() const SLUICE_EXCLUDES(ready_mutex_) {
    MutexLock lock(&ready_mutex_);
    return std::any_of(ready_view_.begin(), ready_view_.end(),
                       [](const auto& store) { return store->Ready(); });
  }

  // The primaries of the slot map in force (and nodes kept while they are up), by address.
  std::vector<StoreNodeStatus> Nodes() const SLUICE_EXCLUDES(ready_mutex_) {
    MutexLock lock(&ready_mutex_);
    std::vector<StoreNodeStatus> nodes;
    for (size_t i = 0; i < ready_view_.size(); ++i) {
      nodes.push_back({view_addresses_[i], ready_view_[i]->Ready(),
                       ready_view_[i]->Nodes().front().round_trips});
    }
    return nodes;
  }

  ClusterStoreStats Stats() const {
    auto get = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
    return {reader_ ? reader_->reads() : 0, get(moved_), get(asked_), get(retries_),
            primaries_.load(std::memory_order_relaxed)};
  }

 private:
  // One Apply, split by slot: its replies join as the calls for its slots answer.
  struct SplitApply {
    std::vector<BucketOp> ops;
    bool all_or_nothing = false;  // then every op is in one slot: one call
    Clock::TimePoint deadline;
    std::shared_ptr<stores::ReplyJoin> join;
  };
  using SplitApplyPtr = std::shared_ptr<SplitApply>;

  // The operations of one Apply that share a slot: one script call, redirected as needed.
  struct SlotCall {
    SplitApplyPtr apply;
    uint16_t slot = 0;
    std::vector<size_t> indices;  // into apply->ops
    int redirects = 0;
    int retries = 0;
    std::string sent_to_host = {};  // of the node last asked: a redirection may name only a port
  };
  using CallPtr = std::shared_ptr<SlotCall>;

  // A primary and the auto-pipelined connection to it.
  struct Node {
    std::string address;  // host:port
    std::string host;
    std::shared_ptr<RedisStore> store;
  };
  using NodePtr = std::shared_ptr<Node>;

  // --- Applies (on the io_context, but for SplitBySlot) -------------------------------------

  // One call for each slot that `ops` name, in the order of their first ops.
  static std::vector<CallPtr> SplitBySlot(const SplitApplyPtr& apply,
                                          const std::vector<BucketOp>& ops) {
    std::vector<CallPtr> calls;
    for (size_t i = 0; i < ops.size(); ++i) {
      const uint16_t slot = KeySlot(ops[i].key);
      auto same = std::find_if(calls.begin(), calls.end(),
                               [slot](const CallPtr& c) { return c->slot == slot; });
      if (same == calls.end()) {
        calls.push_back(std::make_shared<SlotCall>(SlotCall{apply, slot, {}}));
        same = calls.end() - 1;
      }
      (*same)->indices.push_back(i);
    }
    return calls;
  }

  void Begin(const std::vector<CallPtr>& calls) {
    stores::ReplyJoin& join = *calls.front()->apply->join;
    if (stopped_) return join.Fail(Status::Unavailable("the cluster store is stopped"));
    if (!reader_) return join.Fail(Status::Unavailable(setup_error_));
    for (const CallPtr& call : calls) Dispatch(call, Owner(call->slot), false);
  }

  void Dispatch(const CallPtr& call, const NodePtr& node, bool asking) {
    SplitApply& apply = *call->apply;
    if (apply.join->Answered()) return;
    if (stopped_) return apply.join->Fail(Status::Unavailable("the cluster store is stopped"));
    if (!node) {
      return Retry(
          call, Status::Unavailable("no primary is known for slot " + std::to_string(call->slot)));
    }
    call->sent_to_host = node->host;
    std::vector<BucketOp> ops;
    ops.reserve(call->indices.size());
    for (size_t i : call->indices) ops.push_back(apply.ops[i]);
    ApplyCall(*node->store, std::move(ops),
              RedisCall{asking, apply.all_or_nothing, apply.deadline, call->slot},
              [self = shared_from_this(), call](const Result<std::vector<BucketReply>>& r) {
                self->OnCallDone(call, r);
              });
  }

  void OnCallDone(const CallPtr& call, const Result<std::vector<BucketReply>>& result) {
    stores::ReplyJoin& join = *call->apply->join;
    if (join.Answered()) return;
    if (result.ok()) return join.Answer(call->indices, result);
    const Status& error = result.status();
    if (error.code() == StatusCode::kStoreError) {
      if (Result<cluster::Redirect> redirect = cluster::ParseRedirect(error.message());
          redirect.ok()) {
        return Follow(call, *redirect, error);
      }
      if (cluster::IsTransientClusterError(error.message())) return Retry(call, error);
    }
    // Unavailable: the call was never sent. One cut off by a lost connection is
    // kDeadlineExceeded: it may have been applied, and is not sent again.
    if (error.code() == StatusCode::kUnavailable) return Retry(call, error);
    join.Fail(error);  // a timeout, overload, or an error retrying cannot fix
  }

  void Follow(const CallPtr& call, const cluster::Redirect& redirect, const Status& error) {
    stores::ReplyJoin& join = *call->apply->join;
    if (stopped_) return join.Fail(Status::Unavailable("the cluster store is stopped"));
    if (++call->redirects > options_.max_redirects) {
      return join.Fail(Status::StoreError("more than " + std::to_string(options_.max_redirects) +
                                          " redirections: " + error.message()));
    }
    NodePtr target =
        NodeAt(redirect.host.empty() ? call->sent_to_host : redirect.host, redirect.port);
    if (redirect.kind == cluster::Redirect::Kind::kAsk) {
      asked_.fetch_add(1, std::memory_order_relaxed);
      return Dispatch(call, target, true);  // this call only; the slot map stays
    }
    moved_.fetch_add(1, std::memory_order_relaxed);
    if (!slots_.empty()) slots_[redirect.slot] = target;
    RequestRefresh();  // one slot moved: others probably did too
    Dispatch(call, target, false);
  }

  // The cluster is changing (a failover, a slot migration, a node loading): read the slot map
  // again and try once more after a pause, while the Apply's time lasts.
  void Retry(const CallPtr& call, const Status& error) {
    RequestRefresh();
    const milliseconds pause = std::min<milliseconds>(
        milliseconds(2) * (1 << std::min(call->retries, 6)), milliseconds(100));
    ++call->retries;
    if (options_.clock->Now() + pause >= call->apply->deadline) {
      return call->apply->join->Fail(error);
    }
    retries_.fetch_add(1, std::memory_order_relaxed);
    auto timer = std::make_shared<ClockTimer>(io_, options_.clock);
    timer->expires_after(pause);
    timer->async_wait([self = shared_from_this(), call, timer](boost::system::error_code ec) {
      if (!ec) self->Dispatch(call, self->Owner(call->slot), false);
    });
  }

  NodePtr Owner(uint16_t slot) const { return slots_.empty() ? nullptr : slots_[slot]; }

  // The connection to `host:port`, opened if there is none yet. With TLS, the node's
  // certificate must name `hostname` when the slot map announced one, else server_name, else
  // the address connected to.
  NodePtr NodeAt(const std::string& host, uint16_t port, const std::string& hostname = "") {
    const std::string address = host + ":" + std::to_string(port);
    NodePtr& node = nodes_[address];
    if (!node) {
      RedisOptions redis;
      redis.host = host;
      redis.port = port;
      redis.username = options_.username;
      redis.tls = options_.tls;
      if (redis.tls && !hostname.empty()) redis.tls->server_name = hostname;
      redis.mode = options_.mode;
      redis.layout = options_.layout;
      redis.connect_timeout = options_.connect_timeout;
      redis.timeout = options_.timeout;
      redis.max_in_flight = options_.max_in_flight;
      redis.clock = options_.clock;
      node = std::make_shared<Node>(
          Node{address, host, std::make_shared<RedisStore>(redis, credentials_, &io_)});
    }
    return node;
  }

  // A new slot map: connections to new primaries open (and load the script); those to nodes
  // that serve no slot now close if they are down (failing their calls over to the new owners),
  // and stay while they are up: a node importing slots gets ASK redirections before it owns any.
  void AdoptSlotMap(const std::vector<cluster::SlotRange>& ranges) SLUICE_EXCLUDES(ready_mutex_) {
    if (stopped_) return;
    std::vector<NodePtr> slots(kClusterSlots);
    std::map<std::string, NodePtr> kept;
    for (const cluster::SlotRange& range : ranges) {
      NodePtr node = NodeAt(range.host, range.port, range.hostname);
      kept[node->address] = node;
      for (unsigned s = range.first; s <= range.last; ++s) slots[s] = node;
    }
    for (auto& [address, node] : nodes_) {
      if (!kept.contains(address) && node->store->Ready()) kept[address] = node;
    }
    nodes_ = std::move(kept);
    slots_ = std::move(slots);
    primaries_.store(nodes_.size(), std::memory_order_relaxed);
    std::vector<HostPort> known;
    std::vector<std::shared_ptr<RedisStore>> view;
    std::vector<std::string> addresses;
    for (const auto& [address, node] : nodes_) {
      view.push_back(node->store);
      addresses.push_back(address);
      if (auto hp = ParseHostPort(address); hp.ok()) known.push_back(*hp);
    }
    reader_->SetPrimaries(std::move(known));
    MutexLock lock(&ready_mutex_);
    ready_view_ = std::move(view);
    view_addresses_ = std::move(addresses);
  }

  void Shutdown() SLUICE_EXCLUDES(ready_mutex_) {
    stopped_ = true;
    if (reader_) reader_->Stop();
    slots_.clear();
    nodes_.clear();  // their connections fail what they hold, and those checks then stop here
    MutexLock lock(&ready_mutex_);
    ready_view_.clear();
    view_addresses_.clear();
  }

  void RequestRefresh() { reader_->Request(); }

  // --- Members ------------------------------------------------------------------------------

  const ClusterOptions options_;
  const std::shared_ptr<RedisCredentials> credentials_;
  const std::string setup_error_;
  stores::StoreLoop loop_;  // first in, last out: everything below runs on it
  asio::io_context& io_;
  std::shared_ptr<cluster::SlotMapReader> reader_;  // null without credentials

  // The io_context's thread only.
  std::vector<NodePtr> slots_;  // empty until the first slot map
  std::map<std::string, NodePtr> nodes_;
  bool stopped_ = false;

  mutable Mutex ready_mutex_;
  std::vector<std::shared_ptr<RedisStore>> ready_view_ SLUICE_GUARDED_BY(ready_mutex_);
  std::vector<std::string> view_addresses_
      SLUICE_GUARDED_BY(ready_mutex_);  // ready_view_'s, in order

  std::atomic<uint64_t> moved_{0};
  std::atomic<uint64_t> asked_{0};
  std::atomic<uint64_t> retries_{0};
  std::atomic<size_t> primaries_{0};
};

namespace {

// The store's state for `options`, its credentials read here when the caller has none.
std::shared_ptr<ClusterStore::Impl> MakeImpl(ClusterOptions options,
                                             std::shared_ptr<RedisCredentials> credentials,
                                             asio::io_context* io) {
  std::string setup_error;
  credentials = redis::CredentialsOrLoad(options, std::move(credentials), setup_error);
  auto impl = std::make_shared<ClusterStore::Impl>(std::move(options), std::move(credentials),
                                                   std::move(setup_error), io);
  impl->Start();
  return impl;
}

}  // namespace

ClusterStore::ClusterStore(ClusterOptions options)
    : impl_(MakeImpl(std::move(options), nullptr, nullptr)) {}

ClusterStore::ClusterStore(ClusterOptions options, asio::io_context& io)
    : impl_(MakeImpl(std::move(options), nullptr, &io)) {}

ClusterStore::ClusterStore(ClusterOptions options, std::shared_ptr<RedisCredentials> credentials,
                           asio::io_context* io)
    : impl_(MakeImpl(std::move(options), std::move(credentials), io)) {}

ClusterStore::~ClusterStore() { impl_->Stop(); }

void ClusterStore::Apply(std::vector<BucketOp> ops, StoreCallback done) {
  impl_->Submit(std::move(ops), false, std::move(done));
}

void ClusterStore::ApplyAllOrNothing(std::vector<BucketOp> ops, StoreCallback done) {
  impl_->Submit(std::move(ops), true, std::move(done));
}

bool ClusterStore::Ready() const { return impl_->Ready(); }

bool ClusterStore::WaitReady(std::chrono::milliseconds timeout) const {
  // The caller waits in real time, whatever clock the store's own timeouts are on.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!Ready()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

std::vector<StoreNodeStatus> ClusterStore::Nodes() const { return impl_->Nodes(); }

ClusterStoreStats ClusterStore::Stats() const { return impl_->Stats(); }

}  // namespace sluice
