#include <utility>  // before asio: Boost 1.74's coroutine support needs it first

#include "sluice/cluster_store.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <charconv>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "sluice/key_slot.h"
#include "store_loop.h"
#include "topology.h"

namespace sluice {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using ContextPtr = std::unique_ptr<redisContext, ContextDeleter>;

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

timeval ToTimeval(milliseconds ms) {
  return {static_cast<time_t>(ms.count() / 1000),
          static_cast<suseconds_t>(ms.count() % 1000 * 1000)};
}

ReplyPtr Command(redisContext* c, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  return ReplyPtr(static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lengths.data())));
}

std::string ReplyError(const ReplyPtr& reply, redisContext* c) {
  if (!reply) return c->errstr;
  return {reply->str, static_cast<size_t>(reply->len)};
}

// Reads the slot map from one node, over a short-lived blocking connection: CLUSTER SHARDS, or
// CLUSTER SLOTS where the server does not know it.
Result<std::vector<cluster::SlotRange>> ReadSlotMapFrom(const std::string& host, uint16_t port,
                                                        const ClusterOptions& options) {
  const std::string where = host + ":" + std::to_string(port);
  ContextPtr c(redisConnectWithTimeout(host.c_str(), port, ToTimeval(options.connect_timeout)));
  if (!c || c->err) {
    return Status::Unavailable(where + ": " + (c ? c->errstr : "cannot allocate a connection"));
  }
  redisSetTimeout(c.get(), ToTimeval(options.connect_timeout));
  if (!options.password.empty()) {
    ReplyPtr auth = options.username.empty()
                        ? Command(c.get(), {"AUTH", options.password})
                        : Command(c.get(), {"AUTH", options.username, options.password});
    if (!auth || auth->type == REDIS_REPLY_ERROR) {
      return Status::Unavailable(where + " refused AUTH: " + ReplyError(auth, c.get()));
    }
  }
  ReplyPtr shards = Command(c.get(), {"CLUSTER", "SHARDS"});
  if (!shards) return Status::Unavailable(where + ": " + c->errstr);
  if (shards->type != REDIS_REPLY_ERROR) return cluster::ParseClusterShards(*shards, host);
  ReplyPtr slots = Command(c.get(), {"CLUSTER", "SLOTS"});
  if (!slots) return Status::Unavailable(where + ": " + c->errstr);
  if (slots->type == REDIS_REPLY_ERROR) {
    return Status::StoreError(where + ": " + ReplyError(slots, c.get()));
  }
  return cluster::ParseClusterSlots(*slots, host);
}

bool OneSlot(const std::vector<BucketOp>& ops) {
  const uint16_t slot = KeySlot(ops.front().key);
  return std::all_of(ops.begin(), ops.end(),
                     [slot](const BucketOp& op) { return KeySlot(op.key) == slot; });
}

}  // namespace

Result<std::pair<std::string, uint16_t>> ParseHostPort(std::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return Status::InvalidArgument("\"" + std::string(address) + "\" is not host:port");
  }
  unsigned port = 0;
  const auto [end, ec] =
      std::from_chars(address.data() + colon + 1, address.data() + address.size(), port);
  if (ec != std::errc() || end != address.data() + address.size() || port == 0 || port > 65535) {
    return Status::InvalidArgument("\"" + std::string(address) + "\" has a bad port");
  }
  std::string_view host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);  // an IPv6 address: [::1]:7001
  }
  return std::pair{std::string(host), static_cast<uint16_t>(port)};
}

class ClusterStore::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(ClusterOptions options, asio::io_context* external)
      : options_(std::move(options)), loop_(external), io_(loop_.io()) {}

  // Starts reading the slot map, and the own thread if there is one.
  void Start() {
    refresher_ = std::thread([this] { RefreshLoop(); });
    loop_.Start(shared_from_this());
  }

  // Ends the slot map reader, then fails what is pending (on the io_context) and ends the own
  // thread. Callable from any thread but the reader's.
  void Stop() {
    {
      std::lock_guard lock(refresh_mutex_);
      stopping_ = true;
    }
    refresh_changed_.notify_all();
    refresher_.join();
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
    auto check = std::make_shared<Check>();
    check->ops = std::move(ops);
    check->all_or_nothing = all_or_nothing;
    check->done = std::move(done);
    check->deadline = Clock::now() + options_.timeout;
    asio::post(io_, [self = shared_from_this(), check] { self->Begin(check); });
  }

  bool Ready() const {
    std::lock_guard lock(ready_mutex_);
    return std::any_of(ready_view_.begin(), ready_view_.end(),
                       [](const auto& store) { return store->Ready(); });
  }

  ClusterStoreStats Stats() const {
    auto get = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
    return {get(refreshes_), get(moved_), get(asked_), get(retries_),
            primaries_.load(std::memory_order_relaxed)};
  }

 private:
  // One Apply: the replies fill in as the calls for its slots answer.
  struct Check {
    std::vector<BucketOp> ops;
    bool all_or_nothing = false;  // then every op is in one slot: one call
    StoreCallback done;
    Clock::time_point deadline;
    std::vector<BucketReply> replies;
    size_t outstanding = 0;
    bool finished = false;

    void Finish(Result<std::vector<BucketReply>> result) {
      if (finished) return;
      finished = true;
      done(std::move(result));
    }
  };
  using CheckPtr = std::shared_ptr<Check>;

  // The operations of one check that share a slot: one script call, redirected as needed.
  struct SlotCall {
    CheckPtr check;
    uint16_t slot = 0;
    std::vector<size_t> indices;  // into check->ops
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

  // --- Checks (on the io_context) -----------------------------------------------------------

  void Begin(const CheckPtr& check) {
    if (stopped_) return check->Finish(Status::Unavailable("the cluster store is stopped"));
    std::vector<CallPtr> calls;
    for (size_t i = 0; i < check->ops.size(); ++i) {
      const uint16_t slot = KeySlot(check->ops[i].key);
      auto same = std::find_if(calls.begin(), calls.end(),
                               [slot](const CallPtr& c) { return c->slot == slot; });
      if (same == calls.end()) {
        calls.push_back(std::make_shared<SlotCall>(SlotCall{check, slot, {}}));
        same = calls.end() - 1;
      }
      (*same)->indices.push_back(i);
    }
    check->replies.resize(check->ops.size());
    check->outstanding = calls.size();
    for (const CallPtr& call : calls) Dispatch(call, Owner(call->slot), false);
  }

  void Dispatch(const CallPtr& call, const NodePtr& node, bool asking) {
    Check& check = *call->check;
    if (check.finished) return;
    if (stopped_) return check.Finish(Status::Unavailable("the cluster store is stopped"));
    if (!node) {
      return Retry(
          call, Status::Unavailable("no primary is known for slot " + std::to_string(call->slot)));
    }
    call->sent_to_host = node->host;
    std::vector<BucketOp> ops;
    ops.reserve(call->indices.size());
    for (size_t i : call->indices) ops.push_back(check.ops[i]);
    node->store->Apply(std::move(ops),
                       RedisCall{asking, check.all_or_nothing, check.deadline, call->slot},
                       [self = shared_from_this(), call](Result<std::vector<BucketReply>> r) {
                         self->OnCallDone(call, std::move(r));
                       });
  }

  void OnCallDone(const CallPtr& call, Result<std::vector<BucketReply>> result) {
    Check& check = *call->check;
    if (check.finished) return;
    if (result.ok()) {
      for (size_t k = 0; k < call->indices.size(); ++k) {
        check.replies[call->indices[k]] = (*result)[k];
      }
      if (--check.outstanding == 0) check.Finish(std::move(check.replies));
      return;
    }
    const Status& error = result.status();
    if (error.code() == StatusCode::kStoreError) {
      if (Result<cluster::Redirect> redirect = cluster::ParseRedirect(error.message());
          redirect.ok()) {
        return Follow(call, *redirect, error);
      }
      if (cluster::IsTransientClusterError(error.message())) return Retry(call, error);
    }
    if (error.code() == StatusCode::kUnavailable) return Retry(call, error);
    check.Finish(error);  // a timeout, overload, or an error retrying cannot fix
  }

  void Follow(const CallPtr& call, const cluster::Redirect& redirect, const Status& error) {
    if (stopped_) return call->check->Finish(Status::Unavailable("the cluster store is stopped"));
    if (++call->redirects > options_.max_redirects) {
      return call->check->Finish(Status::StoreError("more than " +
                                                    std::to_string(options_.max_redirects) +
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
  // again and try once more after a pause, while the check's time lasts.
  void Retry(const CallPtr& call, const Status& error) {
    RequestRefresh();
    const milliseconds pause = std::min<milliseconds>(
        milliseconds(2) * (1 << std::min(call->retries, 6)), milliseconds(100));
    ++call->retries;
    if (Clock::now() + pause >= call->check->deadline) return call->check->Finish(error);
    retries_.fetch_add(1, std::memory_order_relaxed);
    auto timer = std::make_shared<asio::steady_timer>(io_, pause);
    timer->async_wait([self = shared_from_this(), call, timer](boost::system::error_code ec) {
      if (!ec) self->Dispatch(call, self->Owner(call->slot), false);
    });
  }

  NodePtr Owner(uint16_t slot) const { return slots_.empty() ? nullptr : slots_[slot]; }

  // The connection to `host:port`, opened if there is none yet.
  NodePtr NodeAt(const std::string& host, uint16_t port) {
    const std::string address = host + ":" + std::to_string(port);
    NodePtr& node = nodes_[address];
    if (!node) {
      RedisOptions redis;
      redis.host = host;
      redis.port = port;
      redis.username = options_.username;
      redis.password = options_.password;
      redis.mode = options_.mode;
      redis.connect_timeout = options_.connect_timeout;
      redis.timeout = options_.timeout;
      redis.max_in_flight = options_.max_in_flight;
      node = std::make_shared<Node>(Node{address, host, std::make_shared<RedisStore>(redis, io_)});
    }
    return node;
  }

  // A new slot map: connections to new primaries open (and load the script); those to nodes
  // that serve no slot now close if they are down (failing their calls over to the new owners),
  // and stay while they are up: a node importing slots gets ASK redirections before it owns any.
  void ApplySlotMap(const std::vector<cluster::SlotRange>& ranges) {
    if (stopped_) return;
    std::vector<NodePtr> slots(kClusterSlots);
    std::map<std::string, NodePtr> kept;
    for (const cluster::SlotRange& range : ranges) {
      NodePtr node = NodeAt(range.host, range.port);
      kept[node->address] = node;
      for (unsigned s = range.first; s <= range.last; ++s) slots[s] = node;
    }
    for (auto& [address, node] : nodes_) {
      if (!kept.contains(address) && node->store->Ready()) kept[address] = node;
    }
    nodes_ = std::move(kept);
    slots_ = std::move(slots);
    primaries_.store(nodes_.size(), std::memory_order_relaxed);
    std::vector<std::pair<std::string, uint16_t>> known;
    std::vector<std::shared_ptr<RedisStore>> view;
    for (const auto& [address, node] : nodes_) {
      view.push_back(node->store);
      if (auto hp = ParseHostPort(address); hp.ok()) known.push_back(*hp);
    }
    {
      std::lock_guard lock(ready_mutex_);
      ready_view_ = std::move(view);
    }
    std::lock_guard lock(refresh_mutex_);
    known_primaries_ = std::move(known);
  }

  void Shutdown() {
    stopped_ = true;
    slots_.clear();
    nodes_.clear();  // their connections fail what they hold, and those checks then stop here
    std::lock_guard lock(ready_mutex_);
    ready_view_.clear();
  }

  // --- The slot map reader (its own thread: the reads block) --------------------------------

  void RequestRefresh() {
    {
      std::lock_guard lock(refresh_mutex_);
      if (refresh_wanted_) return;
      refresh_wanted_ = true;
    }
    refresh_changed_.notify_all();
  }

  void RefreshLoop() {
    std::unique_lock lock(refresh_mutex_);
    milliseconds gap = options_.refresh_min_gap;
    std::optional<Clock::time_point> last;
    while (!stopping_) {
      if (last) {
        refresh_changed_.wait_until(lock, *last + options_.refresh_interval,
                                    [this] { return stopping_ || refresh_wanted_; });
        // Never sooner than the gap after the last read, however many calls ask.
        refresh_changed_.wait_until(lock, *last + gap, [this] { return stopping_; });
        if (stopping_) break;
      }
      refresh_wanted_ = false;
      std::vector<std::pair<std::string, uint16_t>> candidates = Candidates();
      lock.unlock();
      Result<std::vector<cluster::SlotRange>> map = ReadSlotMap(candidates);
      lock.lock();
      // Jitter, so that the gateways (and the loops of one gateway) spread their reads.
      last = Clock::now() + milliseconds(std::uniform_int_distribution<int64_t>(
                                0, options_.refresh_min_gap.count() / 2)(rng_));
      refreshes_.fetch_add(1, std::memory_order_relaxed);
      if (map.ok()) {
        gap = options_.refresh_min_gap;
        asio::post(io_, [self = shared_from_this(), ranges = std::move(map).value()] {
          self->ApplySlotMap(ranges);
        });
      } else {
        gap = std::min<milliseconds>(gap * 2, milliseconds(2000));
        refresh_wanted_ = true;  // keep trying, more slowly
      }
    }
  }

  // Whom to ask, under refresh_mutex_: the node that answered last, then the primaries and the
  // seeds in a random order, so that one dead node does not delay every read the same way.
  std::vector<std::pair<std::string, uint16_t>> Candidates() {
    std::vector<std::pair<std::string, uint16_t>> candidates = known_primaries_;
    candidates.insert(candidates.end(), options_.seeds.begin(), options_.seeds.end());
    std::shuffle(candidates.begin(), candidates.end(), rng_);
    if (auto it = std::find(candidates.begin(), candidates.end(), last_answered_);
        it != candidates.end()) {
      std::iter_swap(candidates.begin(), it);
    }
    return candidates;
  }

  // Asks the candidates in turn until one answers; gives up at once when the store stops.
  Result<std::vector<cluster::SlotRange>> ReadSlotMap(
      const std::vector<std::pair<std::string, uint16_t>>& candidates) {
    Status last = Status::Unavailable("no cluster node to ask");
    for (const auto& candidate : candidates) {
      {
        std::lock_guard lock(refresh_mutex_);
        if (stopping_) break;
      }
      Result<std::vector<cluster::SlotRange>> map =
          ReadSlotMapFrom(candidate.first, candidate.second, options_);
      if (map.ok() && !map->empty()) {
        std::lock_guard lock(refresh_mutex_);
        last_answered_ = candidate;
        return map;
      }
      if (!map.ok()) last = map.status();
    }
    return last;
  }

  // --- Members ------------------------------------------------------------------------------

  const ClusterOptions options_;
  stores::StoreLoop loop_;  // first in, last out: everything below runs on it
  asio::io_context& io_;
  std::thread refresher_;

  // The io_context's thread only.
  std::vector<NodePtr> slots_;  // empty until the first slot map
  std::map<std::string, NodePtr> nodes_;
  bool stopped_ = false;

  // Shared with the reader.
  std::mutex refresh_mutex_;
  std::condition_variable refresh_changed_;
  bool refresh_wanted_ = false;
  bool stopping_ = false;
  std::vector<std::pair<std::string, uint16_t>> known_primaries_;
  std::pair<std::string, uint16_t> last_answered_;
  std::mt19937_64 rng_{std::random_device{}()};

  mutable std::mutex ready_mutex_;
  std::vector<std::shared_ptr<RedisStore>> ready_view_;

  std::atomic<uint64_t> refreshes_{0};
  std::atomic<uint64_t> moved_{0};
  std::atomic<uint64_t> asked_{0};
  std::atomic<uint64_t> retries_{0};
  std::atomic<size_t> primaries_{0};
};

ClusterStore::ClusterStore(ClusterOptions options)
    : impl_(std::make_shared<Impl>(std::move(options), nullptr)) {
  impl_->Start();
}

ClusterStore::ClusterStore(ClusterOptions options, asio::io_context& io)
    : impl_(std::make_shared<Impl>(std::move(options), &io)) {
  impl_->Start();
}

ClusterStore::~ClusterStore() { impl_->Stop(); }

void ClusterStore::Apply(std::vector<BucketOp> ops, StoreCallback done) {
  impl_->Submit(std::move(ops), false, std::move(done));
}

void ClusterStore::ApplyAllOrNothing(std::vector<BucketOp> ops, StoreCallback done) {
  impl_->Submit(std::move(ops), true, std::move(done));
}

bool ClusterStore::Ready() const { return impl_->Ready(); }

bool ClusterStore::WaitReady(std::chrono::milliseconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  while (!Ready()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

ClusterStoreStats ClusterStore::Stats() const { return impl_->Stats(); }

}  // namespace sluice
