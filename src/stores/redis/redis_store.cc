#include <utility>  // before asio: Boost 1.74's coroutine support needs it first

#include "sluice/redis_store.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <queue>
#include <random>
#include <thread>

#include "resp_writer.h"
#include "store_loop.h"

namespace sluice {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::array kAlgorithms = {Algorithm::kTokenBucket, Algorithm::kGcra,
                                    Algorithm::kFixedWindow};

size_t Index(Algorithm algorithm) { return static_cast<size_t>(algorithm); }

constexpr std::array<std::string_view, kAlgorithms.size()> kFunctionNames = {
    "sluice_token_bucket", "sluice_gcra", "sluice_fixed_window"};

// One check's codes for calls.lua, one per op: 'u' takes up to the cost; in an all-or-nothing
// check, '1' for each op whose rejection charges none; else '0'.
void AppendCodes(std::string& codes, const std::vector<BucketOp>& ops, bool all_or_nothing) {
  for (const BucketOp& op : ops) {
    codes.push_back(op.up_to ? 'u' : (all_or_nothing && op.enforced) ? '1' : '0');
  }
}

// Checks gathered in one script call share Redis's per-call cost (the call, the clock, a read
// and a write per key however many checks take from it); the cap bounds how long one call
// holds the server, which serves no one else meanwhile: about 5 us an op on distinct keys, so
// some 0.3 ms, while 64 checks already pay the per-call cost a sixty-fourth each.
constexpr size_t kMaxOpsPerCall = 64;

// Script calls written and not yet answered, at most. Past it, checks wait for an answer to go
// in the next call together: under load each call then carries more checks, and Redis and the
// gateway each spend less a check; when idle, a check goes at once as before.
constexpr size_t kMaxCallsAwaited = 2;

// A NOSCRIPT answer is followed by a reload and a resend; twice in a row for one operation
// means something else is wrong, and the check fails instead of looping.
constexpr int kMaxResends = 2;

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

struct ReaderDeleter {
  void operator()(redisReader* r) const { redisReaderFree(r); }
};
using ReaderPtr = std::unique_ptr<redisReader, ReaderDeleter>;

std::string_view ErrorText(const redisReply& reply) {
  return {reply.str, static_cast<size_t>(reply.len)};
}

bool IsError(const redisReply& reply) { return reply.type == REDIS_REPLY_ERROR; }

// The server no longer has the code: a restart, SCRIPT FLUSH, failover, or FUNCTION FLUSH.
bool IsMissingCode(std::string_view error) {
  return error.starts_with("NOSCRIPT") || error.starts_with("ERR Function not found");
}

// A cluster node answers for a call's keys together while their slot migrates: ASK when one is
// gone from it, TRYAGAIN when some are and some are not. For a call of several checks, that
// may be about another check's keys than this one's.
bool IsAboutSomeKeys(std::string_view error) {
  return error.starts_with("ASK ") || error.starts_with("TRYAGAIN");
}

// One check's part of a script call's reply, from element `offset`: allowed (for an up_to op,
// the tokens it took), remaining, retry_ms for each op in turn; or the server's error when one
// of the check's keys could not be read.
Result<std::vector<BucketReply>> ParseBucketReplies(const redisReply& reply, size_t offset,
                                                    const std::vector<BucketOp>& ops) {
  const size_t count = ops.size();
  const redisReply* const* element = reply.element + offset;
  for (size_t i = 0; i < 3 * count; ++i) {
    if (IsError(*element[i])) return Status::StoreError(std::string(ErrorText(*element[i])));
    if (element[i]->type != REDIS_REPLY_INTEGER) {
      return Status::StoreError("the bucket script returned a non-integer");
    }
  }
  std::vector<BucketReply> replies(count);
  for (size_t i = 0; i < count; ++i) {
    const long long first = element[3 * i]->integer;
    replies[i] = {ops[i].up_to ? first == ops[i].cost : first == 1, element[3 * i + 1]->integer,
                  element[3 * i + 2]->integer, ops[i].up_to ? first : 0};
  }
  return replies;
}

}  // namespace

std::string_view BucketScript(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kGcra:
      return GcraScript();
    case Algorithm::kFixedWindow:
      return FixedWindowScript();
    case Algorithm::kTokenBucket:
      break;
  }
  return TokenBucketScript();
}

std::string FunctionLibrary() {
  std::string library = "#!lua name=sluice\n";
  for (Algorithm algorithm : kAlgorithms) {
    library.append("\nredis.register_function('").append(kFunctionNames[Index(algorithm)]);
    library.append("', function(KEYS, ARGV)\n").append(BucketScript(algorithm)).append("end)\n");
  }
  return library;
}

// `ops` split by algorithm, each part with the positions its ops had.
struct AlgorithmPart {
  std::vector<BucketOp> ops;
  std::vector<size_t> positions;
};
std::vector<AlgorithmPart> SplitByAlgorithm(std::vector<BucketOp> ops) {
  std::array<AlgorithmPart, kAlgorithms.size()> parts;
  for (size_t i = 0; i < ops.size(); ++i) {
    AlgorithmPart& part = parts[Index(ops[i].algorithm)];
    part.ops.push_back(std::move(ops[i]));
    part.positions.push_back(i);
  }
  std::vector<AlgorithmPart> used;
  for (AlgorithmPart& part : parts) {
    if (!part.ops.empty()) used.push_back(std::move(part));
  }
  return used;
}

// One auto-pipelined connection and the thread that runs it. Everything but Submit and the
// readers of atomics runs on that thread, so the connection's state needs no lock.
class RedisStore::Connection : public std::enable_shared_from_this<Connection> {
 public:
  // Runs on `external` when given (its runner's thread), else on an io_context and thread of its
  // own.
  Connection(RedisOptions options, asio::io_context* external)
      : options_(std::move(options)),
        loop_(external),
        io_(loop_.io()),
        socket_(io_),
        resolver_(io_),
        connect_timer_(io_),
        reconnect_timer_(io_),
        deadline_timer_(io_),
        rng_(std::random_device{}()) {
    last_error_ = "connecting to " + Address();
  }

  // Begins connecting, and starts the connection's own thread if it has one. Every handler
  // holds a reference, so the connection lives until its last operation has finished.
  void Start() {
    asio::post(io_, [self = shared_from_this()] { self->Connect(); });
    loop_.Start(shared_from_this());
  }

  // Fails what is pending. Callable from any thread, the connection's own included: a callback
  // may hold the last reference to the store. The own thread, if any, ends; on an external
  // io_context, the shutdown runs there (or never, when that loop has stopped for good).
  void Stop() {
    asio::post(io_, [self = shared_from_this()] { self->Shutdown(); });
    loop_.Finish();
  }

  void Submit(std::vector<BucketOp> ops, const RedisCall& call, StoreCallback done) {
    if (ops.empty()) return done(std::vector<BucketReply>{});
    if (Status s = ValidateBucketOps(ops); !s.ok()) return done(s);
    auto check = std::make_shared<Check>();
    check->ops = std::move(ops);
    check->done = std::move(done);
    check->asking = call.asking;
    check->all_or_nothing = call.all_or_nothing;
    check->slot = call.slot;
    check->algorithm = check->ops.front().algorithm;
    check->deadline = Clock::now() + options_.timeout;
    if (call.deadline) check->deadline = std::min(check->deadline, *call.deadline);
    for (const BucketOp& op : check->ops) {
      check->wait.replicas = std::max(check->wait.replicas, op.wait.replicas);
      check->wait.timeout_ms = std::max(check->wait.timeout_ms, op.wait.timeout_ms);
    }
    {
      std::lock_guard lock(submit_mutex_);
      if (!stopped_) {
        submitted_.push_back(std::move(check));
        if (!drain_posted_) {
          drain_posted_ = true;
          asio::post(io_, [self = shared_from_this()] { self->DrainSubmitted(); });
        }
        return;
      }
    }
    check->done(Status::Unavailable("the redis store is stopped"));
  }

  bool Ready() const { return ready_.load(std::memory_order_acquire); }

  bool WaitReady(std::chrono::milliseconds timeout) const {
    std::unique_lock lock(ready_mutex_);
    return ready_changed_.wait_for(lock, timeout, [this] { return Ready(); });
  }

  RedisStoreStats Stats() const {
    auto get = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
    return {get(connects_), get(script_loads_), get(commands_),
            get(writes_),   get(timeouts_),     get(short_waits_)};
  }

 private:
  // One Apply: its operations, and when it gives up. All of them go in one script call.
  struct Check {
    std::vector<BucketOp> ops;
    StoreCallback done;
    bool asking = false;
    bool all_or_nothing = false;
    std::optional<uint16_t> slot;                     // RedisCall::slot
    Algorithm algorithm = Algorithm::kTokenBucket;    // of every op: one script call
    ReplicaWait wait;                                 // the most any op asks for
    std::optional<std::vector<BucketReply>> replies;  // the script's, while WAIT is pending
    int resends = 0;                                  // after NOSCRIPT
    Clock::time_point deadline;
    bool finished = false;

    // The callback goes once called: a finished check can linger (in the deadline queue until
    // its timer comes) and must not keep what the callback holds alive, the caller's store
    // among it, past a loop that has stopped.
    void Finish(Result<std::vector<BucketReply>> result) {
      if (finished) return;
      finished = true;
      StoreCallback callback = std::move(done);
      done = nullptr;
      callback(std::move(result));
    }
  };
  using CheckPtr = std::shared_ptr<Check>;

  // A command written and not yet answered. Replies arrive in the order commands were written.
  struct Pending {
    enum class Kind { kHandshake, kLoad, kAsking, kBucket, kWait } kind;
    // kBucket: the checks of the script call, in order; kWait: the checks written before it
    // asking for it.
    std::vector<CheckPtr> checks = {};
    Algorithm algorithm = Algorithm::kTokenBucket;  // for kLoad: which script it loads
  };

  // The soonest deadline on top.
  struct LaterDeadline {
    bool operator()(const CheckPtr& a, const CheckPtr& b) const {
      return a->deadline > b->deadline;
    }
  };

  enum class State { kConnecting, kReady, kBackoff, kStopped };

  std::string Address() const { return options_.host + ":" + std::to_string(options_.port); }

  // --- Connecting ---------------------------------------------------------------------------

  void Connect() {
    state_ = State::kConnecting;
    connect_timer_.expires_after(options_.connect_timeout);
    connect_timer_.async_wait(
        [this, self = shared_from_this(), gen = generation_](boost::system::error_code ec) {
          if (!ec && gen == generation_ && state_ == State::kConnecting) {
            Disconnect("timed out connecting to " + Address());
          }
        });
    resolver_.async_resolve(
        options_.host, std::to_string(options_.port),
        [this, self = shared_from_this(), gen = generation_](
            boost::system::error_code ec, const tcp::resolver::results_type& hosts) {
          if (gen != generation_ || state_ != State::kConnecting) return;
          if (ec) return Disconnect("cannot resolve " + options_.host + ": " + ec.message());
          asio::async_connect(
              socket_, hosts,
              [this, self, gen](boost::system::error_code ec, const tcp::endpoint&) {
                if (gen != generation_ || state_ != State::kConnecting) return;
                if (ec) return Disconnect(Address() + ": " + ec.message());
                Handshake();
              });
        });
  }

  // AUTH, SELECT and the script load go out together; checks wait for their answers.
  void Handshake() {
    boost::system::error_code ignored;  // without NODELAY, pipelining still works, only slower
    socket_.set_option(tcp::no_delay(true), ignored);
    reader_.reset(redisReaderCreate());
    redis::RespWriter out(out_);
    if (!options_.password.empty()) {
      if (options_.username.empty()) {
        out.Write({"AUTH", options_.password});
      } else {
        out.Write({"AUTH", options_.username, options_.password});
      }
      pending_.push_back({Pending::Kind::kHandshake});
    }
    if (options_.db != 0) {
      out.Write({"SELECT", std::to_string(options_.db)});
      pending_.push_back({Pending::Kind::kHandshake});
    }
    WriteLoad();
    pending_.back().kind = Pending::Kind::kHandshake;
    ReadMore();
    Flush();
  }

  // Both scripts (each reply names its digest), or the library with both functions.
  void WriteLoad() {
    redis::RespWriter out(out_);
    if (options_.mode == ScriptMode::kEvalsha) {
      for (Algorithm algorithm : kAlgorithms) {
        out.Write({"SCRIPT", "LOAD", BucketScript(algorithm)});
        pending_.push_back({Pending::Kind::kLoad, {}, algorithm});
      }
    } else {
      out.Write({"FUNCTION", "LOAD", "REPLACE", function_library_});
      pending_.push_back({Pending::Kind::kLoad});
    }
    script_loads_.fetch_add(1, std::memory_order_relaxed);
  }

  void BecomeReady() {
    connect_timer_.cancel();
    state_ = State::kReady;
    backoff_attempt_ = 0;
    connects_.fetch_add(1, std::memory_order_relaxed);
    SetReady(true);
    std::deque<CheckPtr> waiting = std::move(waiting_);
    waiting_.clear();
    waiting_ops_ = 0;
    for (CheckPtr& check : waiting) Gather(std::move(check));
    Flush();
  }

  // Drops the connection, fails what it carried, and schedules the next attempt.
  void Disconnect(std::string reason) {
    if (state_ == State::kStopped) return;
    ++generation_;
    last_error_ = std::move(reason);
    boost::system::error_code ignored;
    socket_.close(ignored);
    writing_ = false;  // the aborted write's handler sees a new generation and does nothing
    resolver_.cancel();
    connect_timer_.cancel();
    SetReady(false);
    FailAll(Status::Unavailable(last_error_));
    state_ = State::kBackoff;
    reconnect_timer_.expires_after(NextBackoff());
    reconnect_timer_.async_wait([this, self = shared_from_this()](boost::system::error_code ec) {
      if (!ec && state_ == State::kBackoff) Connect();
    });
  }

  std::chrono::milliseconds NextBackoff() {
    auto delay = options_.reconnect_min * (1LL << std::min(backoff_attempt_++, 16));
    delay = std::min<std::chrono::milliseconds>(delay, options_.reconnect_max);
    // Jitter, so that gateways that lost the same server do not return in lockstep.
    std::uniform_int_distribution<int64_t> half(delay.count() / 2, delay.count());
    return std::chrono::milliseconds(half(rng_));
  }

  void FailAll(const Status& error) {
    for (const Pending& p : pending_) FinishEach(p.checks, error);
    pending_.clear();
    for (CheckPtr& check : waiting_) check->Finish(error);
    waiting_.clear();
    waiting_ops_ = 0;
    for (std::vector<CheckPtr>& checks : gathered_) {
      FinishEach(checks, error);
      checks.clear();
    }
    gathered_ops_ = 0;
    out_.clear();
    waiters_.clear();
    waiters_need_ = {};
    ops_in_flight_ = 0;
    calls_awaited_ = 0;
    reload_queued_ = false;
    idle_since_write_ = true;
  }

  void Shutdown() {
    {
      std::lock_guard lock(submit_mutex_);
      stopped_ = true;
    }
    DrainSubmitted();
    state_ = State::kStopped;
    ++generation_;
    boost::system::error_code ignored;
    socket_.close(ignored);
    resolver_.cancel();
    connect_timer_.cancel();
    reconnect_timer_.cancel();
    deadline_timer_.cancel();
    SetReady(false);
    FailAll(Status::Unavailable("the redis store is stopped"));
  }

  void SetReady(bool ready) {
    {
      std::lock_guard lock(ready_mutex_);
      ready_.store(ready, std::memory_order_release);
    }
    ready_changed_.notify_all();
  }

  // --- Sending ------------------------------------------------------------------------------

  void DrainSubmitted() {
    std::vector<CheckPtr> batch;
    {
      std::lock_guard lock(submit_mutex_);
      batch.swap(submitted_);
      drain_posted_ = false;
    }
    for (CheckPtr& check : batch) Accept(std::move(check));
    Flush();
    ArmDeadlineTimer();
  }

  void Accept(CheckPtr check) {
    switch (state_) {
      case State::kReady:
        if (ops_in_flight_ + gathered_ops_ + check->ops.size() > options_.max_in_flight) {
          return check->Finish(Status::ResourceExhausted(
              "more than " + std::to_string(options_.max_in_flight) + " operations in flight"));
        }
        deadlines_.push(check);
        return Gather(std::move(check));
      case State::kConnecting:
        if (waiting_ops_ + check->ops.size() > options_.max_in_flight) {
          return check->Finish(Status::ResourceExhausted(
              "more than " + std::to_string(options_.max_in_flight) + " operations waiting"));
        }
        waiting_ops_ += check->ops.size();
        deadlines_.push(check);
        waiting_.push_back(std::move(check));
        return;
      case State::kBackoff:
      case State::kStopped:
        return check->Finish(Status::Unavailable(last_error_));
    }
  }

  // Holds a check for the script call that the next write carries: one call for the checks of
  // an algorithm (and, on a cluster node, a slot) that arrive before it. A check sent with
  // ASKING goes alone, since ASKING admits only the command after it.
  void Gather(CheckPtr check) {
    if (check->asking) return Send({std::move(check)});
    gathered_ops_ += check->ops.size();
    gathered_[Index(check->algorithm)].push_back(std::move(check));
  }

  void SendGathered() {
    for (std::vector<CheckPtr>& checks : gathered_) {
      // On a cluster node, by slot; stable, so that a slot's checks keep their order of arrival.
      if (checks.size() > 1 && checks.front()->slot) {
        std::stable_sort(checks.begin(), checks.end(),
                         [](const CheckPtr& a, const CheckPtr& b) { return a->slot < b->slot; });
      }
      std::vector<CheckPtr> call;
      size_t ops = 0;
      for (CheckPtr& check : checks) {
        if (!call.empty() &&
            (call.front()->slot != check->slot || ops + check->ops.size() > kMaxOpsPerCall)) {
          Send(std::exchange(call, {}));
          ops = 0;
        }
        ops += check->ops.size();
        call.push_back(std::move(check));
      }
      if (!call.empty()) Send(std::move(call));
      checks.clear();
    }
    gathered_ops_ = 0;
  }

  // One script call for the buckets of `checks` (one algorithm; one slot): their keys, then four
  // numbers for each, then each check's codes when any is needed; ASKING before it when the
  // check asks for it. A check whose time is up is not sent: the server would charge it and the
  // caller would hear only the timeout.
  void Send(std::vector<CheckPtr> checks) {
    const auto now = Clock::now();
    std::erase_if(checks, [this, now](const CheckPtr& check) {
      if (!check->finished && now >= check->deadline) TimeOut(*check);
      return check->finished;
    });
    if (checks.empty()) return;
    size_t count = 0;
    std::string codes;
    for (const CheckPtr& check : checks) {
      if (!codes.empty()) codes.push_back(' ');
      AppendCodes(codes, check->ops, check->all_or_nothing);
      count += check->ops.size();
    }
    // A lone check of plain ops needs no codes: the common call stays as short as it was.
    const bool plain = checks.size() == 1 && codes.find_first_not_of('0') == std::string::npos;
    redis::RespWriter out(out_);
    if (checks.front()->asking) {
      out.Write({"ASKING"});
      pending_.push_back({Pending::Kind::kAsking});
    }
    out.Command(3 + 5 * count + (plain ? 0 : 1));
    const Algorithm algorithm = checks.front()->algorithm;
    if (options_.mode == ScriptMode::kEvalsha) {
      out.Arg("EVALSHA").Arg(script_sha_[Index(algorithm)]);
    } else {
      out.Arg("FCALL").Arg(kFunctionNames[Index(algorithm)]);
    }
    out.Arg(static_cast<int64_t>(count));
    for (const CheckPtr& check : checks) {
      for (const BucketOp& op : check->ops) out.Arg(op.key);
    }
    for (const CheckPtr& check : checks) {
      for (const BucketOp& op : check->ops) {
        out.Arg(op.limit.capacity).Arg(op.limit.tokens).Arg(op.limit.period_ms).Arg(op.cost);
      }
    }
    if (!plain) out.Arg(codes);
    for (const CheckPtr& check : checks) {
      ops_in_flight_ += check->ops.size();
      if (check->wait.replicas > 0) {
        waiters_.push_back(check);
        waiters_need_.replicas = std::max(waiters_need_.replicas, check->wait.replicas);
        waiters_need_.timeout_ms = std::max(waiters_need_.timeout_ms, check->wait.timeout_ms);
      }
    }
    pending_.push_back({Pending::Kind::kBucket, std::move(checks)});
    ++calls_awaited_;
    commands_.fetch_add(1, std::memory_order_relaxed);
  }

  // One WAIT at the end of a write covers every call before it on the connection: WAIT blocks
  // the connection while it waits, so one per check would queue each behind the last.
  void WriteWait() {
    if (waiters_.empty()) return;
    redis::RespWriter(out_).Write(
        {"WAIT", std::to_string(waiters_need_.replicas), std::to_string(waiters_need_.timeout_ms)});
    pending_.push_back({Pending::Kind::kWait, std::move(waiters_)});
    waiters_.clear();
    waiters_need_ = {};
  }

  // Writes everything queued in one socket write; what queues meanwhile goes in the next one.
  // Gathered checks wait while kMaxCallsAwaited calls are unanswered: the next answer flushes.
  void Flush() {
    if (writing_ || state_ == State::kBackoff || state_ == State::kStopped) return;
    if (calls_awaited_ < kMaxCallsAwaited) SendGathered();
    if (out_.empty()) return;
    WriteWait();
    writing_ = true;
    writing_buffer_.swap(out_);
    out_.clear();
    if (idle_since_write_) {
      last_progress_ = Clock::now();
      idle_since_write_ = false;
    }
    writes_.fetch_add(1, std::memory_order_relaxed);
    asio::async_write(
        socket_, asio::buffer(writing_buffer_),
        [this, self = shared_from_this(), gen = generation_](boost::system::error_code ec, size_t) {
          if (gen != generation_) return;
          writing_ = false;
          if (ec) return Disconnect("writing to " + Address() + ": " + ec.message());
          Flush();
        });
  }

  // --- Receiving ----------------------------------------------------------------------------

  void ReadMore() {
    socket_.async_read_some(
        asio::buffer(read_buffer_), [this, self = shared_from_this(), gen = generation_](
                                        boost::system::error_code ec, size_t n) {
          if (gen != generation_) return;
          if (ec) {
            return Disconnect(ec == asio::error::eof
                                  ? Address() + " closed the connection"
                                  : "reading from " + Address() + ": " + ec.message());
          }
          last_progress_ = Clock::now();
          if (redisReaderFeed(reader_.get(), read_buffer_.data(), n) != REDIS_OK) {
            return Disconnect("malformed reply from " + Address());
          }
          if (!ProcessReplies(gen)) return;
          Flush();
          ReadMore();
        });
  }

  // Handles every complete reply; false when the connection was dropped on the way.
  bool ProcessReplies(uint64_t gen) {
    for (;;) {
      void* raw = nullptr;
      if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK) {
        Disconnect("malformed reply from " + Address());
        return false;
      }
      if (raw == nullptr) return true;
      ReplyPtr reply(static_cast<redisReply*>(raw));
      if (pending_.empty()) {
        Disconnect("unexpected reply from " + Address());
        return false;
      }
      Pending p = std::move(pending_.front());
      pending_.pop_front();
      // A freed place goes to the waiting checks at once, before this call's checks resume their
      // requests (which may take a while), so that Redis works meanwhile.
      if (p.kind == Pending::Kind::kBucket && calls_awaited_-- == kMaxCallsAwaited) Flush();
      if (pending_.empty()) idle_since_write_ = true;
      OnReply(p, *reply);
      if (gen != generation_) return false;
    }
  }

  void OnReply(Pending& p, const redisReply& reply) {
    switch (p.kind) {
      case Pending::Kind::kHandshake:
      case Pending::Kind::kLoad:
        return OnSetupReply(p, reply);
      case Pending::Kind::kAsking:
        return;  // an error here shows again, and is handled, in the call's own reply
      case Pending::Kind::kBucket:
        return OnBucketReply(p, reply);
      case Pending::Kind::kWait:
        return OnWaitReply(p, reply);
    }
  }

  void OnSetupReply(const Pending& p, const redisReply& reply) {
    if (IsError(reply)) {
      return Disconnect(Address() +
                        " refused the connection's setup: " + std::string(ErrorText(reply)));
    }
    if (options_.mode == ScriptMode::kEvalsha && reply.type == REDIS_REPLY_STRING) {
      script_sha_[Index(p.algorithm)].assign(reply.str, static_cast<size_t>(reply.len));
    }
    if (p.kind == Pending::Kind::kLoad) reload_queued_ = false;
    if (p.kind == Pending::Kind::kHandshake && state_ == State::kConnecting && LastSetupReply()) {
      BecomeReady();
    }
  }

  bool LastSetupReply() const {
    return std::none_of(pending_.begin(), pending_.end(),
                        [](const Pending& q) { return q.kind == Pending::Kind::kHandshake; });
  }

  static void FinishEach(const std::vector<CheckPtr>& checks, const Status& error) {
    for (const CheckPtr& check : checks) check->Finish(error);
  }

  void OnBucketReply(const Pending& p, const redisReply& reply) {
    size_t count = 0;
    for (const CheckPtr& check : p.checks) {
      ops_in_flight_ -= check->ops.size();
      count += check->ops.size();
    }
    if (IsError(reply)) {
      const std::string_view error = ErrorText(reply);
      if (IsMissingCode(error)) return Resend(p.checks, error);
      if (p.checks.size() > 1 && IsAboutSomeKeys(error)) {
        // The call never ran; each check's own keys decide where it belongs.
        for (const CheckPtr& check : p.checks) Send({check});
        return;
      }
      return FinishEach(p.checks, Status::StoreError(std::string(error)));
    }
    if (reply.type != REDIS_REPLY_ARRAY || reply.elements != 3 * count) {
      return FinishEach(p.checks, Status::StoreError("unexpected reply to the bucket script"));
    }
    size_t offset = 0;
    for (const CheckPtr& check : p.checks) {
      const size_t at = std::exchange(offset, offset + 3 * check->ops.size());
      if (check->finished) continue;  // timed out while the call was on its way
      Result<std::vector<BucketReply>> replies = ParseBucketReplies(reply, at, check->ops);
      if (replies.ok() && check->wait.replicas > 0) {
        check->replies = std::move(replies).value();  // answered when WAIT is
        continue;
      }
      check->Finish(std::move(replies));
    }
  }

  // The decisions stand whatever WAIT says; a wait that ended short is only counted. A check
  // whose call got NOSCRIPT has no replies yet and is left to the WAIT behind its resent call.
  void OnWaitReply(const Pending& p, const redisReply& reply) {
    int needed = 0;
    for (const CheckPtr& check : p.checks) needed = std::max(needed, check->wait.replicas);
    if (reply.type != REDIS_REPLY_INTEGER || reply.integer < needed) {
      short_waits_.fetch_add(1, std::memory_order_relaxed);
    }
    for (const CheckPtr& check : p.checks) {
      if (!check->finished && check->replies) check->Finish(std::move(*check->replies));
    }
  }

  // The server lost the script: load it again (once for all the calls that noticed), then send
  // the call's checks again behind the load. They never ran, so each is sent exactly once more.
  void Resend(std::vector<CheckPtr> checks, std::string_view error) {
    std::erase_if(checks, [&error](const CheckPtr& check) {
      if (++check->resends <= kMaxResends) return check->finished;
      check->Finish(Status::StoreError("still " + std::string(error) + " after reloading"));
      return true;
    });
    if (!reload_queued_) {
      WriteLoad();
      reload_queued_ = true;
    }
    Send(std::move(checks));
  }

  // --- Deadlines ----------------------------------------------------------------------------

  // One timer for every check, set for the soonest of the soonest deadline and the stall limit,
  // and moved earlier when a check arrives whose deadline comes first.
  void ArmDeadlineTimer() {
    if (state_ == State::kStopped) return;
    while (!deadlines_.empty() && deadlines_.top()->finished) deadlines_.pop();
    std::optional<Clock::time_point> next;
    if (!deadlines_.empty()) next = deadlines_.top()->deadline;
    if (!pending_.empty()) {
      auto stall = last_progress_ + StallLimit();
      next = next ? std::min(*next, stall) : stall;
    }
    if (!next || (timer_armed_ && timer_expiry_ <= *next)) return;
    timer_armed_ = true;
    timer_expiry_ = *next;
    deadline_timer_.expires_at(*next);  // cancels an earlier wait, whose handler sees a new seq
    deadline_timer_.async_wait(
        [this, self = shared_from_this(), seq = ++timer_seq_](boost::system::error_code ec) {
          if (seq != timer_seq_) return;
          timer_armed_ = false;
          if (ec || state_ == State::kStopped) return;
          ExpireChecks();
          ArmDeadlineTimer();
        });
  }

  void ExpireChecks() {
    const auto now = Clock::now();
    while (!deadlines_.empty() &&
           (deadlines_.top()->finished || deadlines_.top()->deadline <= now)) {
      CheckPtr check = deadlines_.top();
      deadlines_.pop();
      TimeOut(*check);
    }
    // A server that has stopped answering (hung, paused, a dead peer that sent no FIN) is
    // dropped so that the reconnect logic can find it again.
    if (!pending_.empty() && now - last_progress_ >= StallLimit()) {
      Disconnect("no reply from " + Address() + " for " + std::to_string(StallLimit().count()) +
                 " ms");
    }
  }

  void TimeOut(Check& check) {
    if (check.finished) return;
    timeouts_.fetch_add(1, std::memory_order_relaxed);
    check.Finish(Status::DeadlineExceeded("no answer from " + Address() + " in time (timeout " +
                                          std::to_string(options_.timeout.count()) + " ms)"));
  }

  std::chrono::milliseconds StallLimit() const {
    return std::max<std::chrono::milliseconds>(std::chrono::seconds(1), 10 * options_.timeout);
  }

  // --- Members ------------------------------------------------------------------------------

  const RedisOptions options_;
  const std::string function_library_ = FunctionLibrary();

  stores::StoreLoop loop_;  // first in, last out: everything below runs on it
  asio::io_context& io_;
  tcp::socket socket_;
  tcp::resolver resolver_;
  asio::steady_timer connect_timer_;
  asio::steady_timer reconnect_timer_;
  asio::steady_timer deadline_timer_;

  // Shared with submitting threads.
  std::mutex submit_mutex_;
  std::vector<CheckPtr> submitted_;
  bool drain_posted_ = false;
  bool stopped_ = false;

  mutable std::mutex ready_mutex_;
  mutable std::condition_variable ready_changed_;
  std::atomic<bool> ready_{false};

  std::atomic<uint64_t> connects_{0};
  std::atomic<uint64_t> script_loads_{0};
  std::atomic<uint64_t> commands_{0};
  std::atomic<uint64_t> writes_{0};
  std::atomic<uint64_t> timeouts_{0};
  std::atomic<uint64_t> short_waits_{0};

  // The connection's own thread only.
  State state_ = State::kConnecting;
  uint64_t generation_ = 0;  // bumped on every disconnect; stale handlers see a new value
  std::string last_error_;
  std::array<std::string, kAlgorithms.size()> script_sha_;  // by algorithm
  ReaderPtr reader_;
  std::array<char, 64UL * 1024> read_buffer_;
  std::string out_;             // commands waiting for the next write
  std::string writing_buffer_;  // the write in progress
  bool writing_ = false;
  std::deque<Pending> pending_;
  std::deque<CheckPtr> waiting_;  // submitted while connecting
  size_t waiting_ops_ = 0;        // their operations
  std::priority_queue<CheckPtr, std::vector<CheckPtr>, LaterDeadline> deadlines_;
  std::array<std::vector<CheckPtr>, kAlgorithms.size()> gathered_;  // by algorithm, to send
  size_t gathered_ops_ = 0;                                         // their operations
  size_t ops_in_flight_ = 0;
  size_t calls_awaited_ = 0;  // script calls written, not yet answered
  bool reload_queued_ = false;
  std::vector<CheckPtr> waiters_;  // sent since the last WAIT, asking for one
  ReplicaWait waiters_need_;       // the most they ask for
  bool timer_armed_ = false;
  Clock::time_point timer_expiry_;
  uint64_t timer_seq_ = 0;
  bool idle_since_write_ = true;
  Clock::time_point last_progress_ = Clock::now();
  int backoff_attempt_ = 0;
  std::mt19937_64 rng_;
};

RedisStore::RedisStore(RedisOptions options)
    : connection_(std::make_shared<Connection>(std::move(options), nullptr)) {
  connection_->Start();
}

RedisStore::RedisStore(RedisOptions options, asio::io_context& io)
    : connection_(std::make_shared<Connection>(std::move(options), &io)) {
  connection_->Start();
}

RedisStore::~RedisStore() { connection_->Stop(); }

void RedisStore::Apply(std::vector<BucketOp> ops, StoreCallback done) {
  Apply(std::move(ops), RedisCall{}, std::move(done));
}

namespace {

bool OneAlgorithm(const std::vector<BucketOp>& ops) {
  return std::all_of(ops.begin(), ops.end(),
                     [&](const BucketOp& op) { return op.algorithm == ops.front().algorithm; });
}

}  // namespace

void RedisStore::ApplyAllOrNothing(std::vector<BucketOp> ops, StoreCallback done) {
  RedisCall call;
  call.all_or_nothing = true;
  Apply(std::move(ops), call, std::move(done));
}

void RedisStore::Apply(std::vector<BucketOp> ops, RedisCall call, StoreCallback done) {
  if (OneAlgorithm(ops)) return connection_->Submit(std::move(ops), call, std::move(done));
  if (call.all_or_nothing) {
    return done(Status::FailedPrecondition(
        "all-or-nothing needs one script call, and these rules use different algorithms"));
  }
  // A call per algorithm, in the same write; one answer when both have come, in the ops' order.
  struct Join {
    std::mutex mutex;
    std::vector<BucketReply> replies;
    size_t outstanding = 0;
    std::optional<Status> error;
    StoreCallback done;
  };
  const size_t count = ops.size();
  std::vector<AlgorithmPart> parts = SplitByAlgorithm(std::move(ops));
  auto join = std::make_shared<Join>();
  join->replies.resize(count);
  join->outstanding = parts.size();
  join->done = std::move(done);
  for (AlgorithmPart& part : parts) {
    connection_->Submit(
        std::move(part.ops), call,
        [join, positions = part.positions](Result<std::vector<BucketReply>> result) {
          std::unique_lock lock(join->mutex);
          if (!result.ok() && !join->error) join->error = result.status();
          for (size_t k = 0; result.ok() && k < positions.size(); ++k) {
            join->replies[positions[k]] = (*result)[k];
          }
          if (--join->outstanding > 0) return;
          lock.unlock();
          if (join->error) return join->done(*join->error);
          join->done(std::move(join->replies));
        });
  }
}

bool RedisStore::Ready() const { return connection_->Ready(); }

bool RedisStore::WaitReady(std::chrono::milliseconds timeout) const {
  return connection_->WaitReady(timeout);
}

RedisStoreStats RedisStore::Stats() const { return connection_->Stats(); }

}  // namespace sluice
