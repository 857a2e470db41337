#include <utility>  // before asio: Boost 1.74's coroutine support needs it first

#include "call_pipeline.h"

#include <algorithm>
#include <boost/asio/post.hpp>

#include "resp_writer.h"
#include "sentinel_locator.h"

namespace sluice::redis {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

// Checks gathered in one script call share Redis's per-call cost (the call, the clock, a read
// and a write per key however many checks take from it); the cap bounds how long one call
// holds the server, which serves no one else meanwhile: about 5 us an op on distinct keys, so
// some 0.3 ms, while 64 checks already pay the per-call cost a sixty-fourth each.
constexpr size_t kMaxOpsPerCall = 64;

// Script calls written and not yet answered, at most. Past it, checks wait for an answer to go
// in the next call together: under load each call then carries more checks, and Redis and the
// gateway each spend less a check; when idle, a check goes at once.
constexpr size_t kMaxCallsAwaited = 2;

// A NOSCRIPT answer is followed by a reload and a resend; twice in a row for one operation
// means something else is wrong, and the check fails instead of looping.
constexpr int kMaxResends = 2;

LinkOptions LinkOptionsOf(const RedisOptions& options) {
  return {options.connect_timeout, options.reconnect_min, options.reconnect_max, true};
}

}  // namespace

std::shared_ptr<Locator> MakeLocator(const RedisOptions& options,
                                     std::shared_ptr<RedisCredentials> credentials,
                                     asio::io_context& io) {
  if (options.sentinel) {
    return std::make_shared<SentinelLocator>(io, options, std::move(credentials));
  }
  NodeAddress address{options.host, options.port, options.unix_path,
                      options.tls ? options.tls->server_name : ""};
  return std::make_shared<FixedLocator>(std::move(address));
}

// One Apply: its operations, and when it gives up. All of them go in one script call.
struct CallPipeline::Check {
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
  Clock::time_point submitted;
  LatencyHistogram* round_trips = nullptr;  // the pipeline's; answered calls are timed
  bool finished = false;

  // The callback goes once called: a finished check can linger (in the deadline queue until
  // its timer comes) and must not keep what the callback holds alive, the caller's store
  // among it, past a loop that has stopped.
  void Finish(Result<std::vector<BucketReply>> result) {
    if (finished) return;
    finished = true;
    if (result.ok() && round_trips != nullptr) {
      round_trips->Observe(std::chrono::duration<double>(Clock::now() - submitted).count());
    }
    StoreCallback callback = std::move(done);
    done = nullptr;
    callback(std::move(result));
  }
};

bool CallPipeline::LaterDeadline::operator()(const CheckPtr& a, const CheckPtr& b) const {
  return a->deadline > b->deadline;
}

CallPipeline::CallPipeline(RedisOptions options, std::shared_ptr<RedisCredentials> credentials,
                           std::string setup_error, asio::io_context* external)
    : options_(std::move(options)),
      function_library_(FunctionLibrary()),
      credentials_(std::move(credentials)),
      loop_(external),
      io_(loop_.io()),
      locator_(MakeLocator(options_, credentials_, io_)),
      link_(io_, LinkOptionsOf(options_), locator_, credentials_, *this, std::move(setup_error)),
      deadline_timer_(io_) {}

CallPipeline::~CallPipeline() = default;

void CallPipeline::Start() {
  asio::post(io_, [self = shared_from_this()] {
    self->locator_->Watch([weak = std::weak_ptr(self)](const NodeAddress& now) {
      if (auto pipeline = weak.lock()) pipeline->OnMoved(now);
    });
    self->link_.Start(self);
  });
  loop_.Start(shared_from_this());
}

void CallPipeline::Stop() {
  asio::post(io_, [self = shared_from_this()] { self->Shutdown(); });
  loop_.Finish();
}

void CallPipeline::Submit(std::vector<BucketOp> ops, const RedisCall& call, StoreCallback done) {
  if (ops.empty()) return done(std::vector<BucketReply>{});
  if (Status s = ValidateBucketOps(ops); !s.ok()) return done(s);
  auto check = std::make_shared<Check>();
  check->ops = std::move(ops);
  check->done = std::move(done);
  check->asking = call.asking;
  check->all_or_nothing = call.all_or_nothing;
  check->slot = call.slot;
  check->algorithm = check->ops.front().algorithm;
  check->submitted = Clock::now();
  check->round_trips = &round_trips_;
  check->deadline = check->submitted + options_.timeout;
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

bool CallPipeline::WaitReady(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(ready_mutex_);
  return ready_changed_.wait_for(lock, timeout, [this] { return Ready(); });
}

RedisStoreStats CallPipeline::Stats() const {
  auto get = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  return {get(connects_), get(script_loads_), get(commands_),
          get(writes_),   get(timeouts_),     get(short_waits_)};
}

// --- Connecting -----------------------------------------------------------------------------

// AUTH, SELECT, ROLE (when the locator asks for it) and the script load go out together; checks
// wait for their answers.
void CallPipeline::OnConnected() {
  RespWriter out(out_);
  const std::string password = credentials_->Password();
  if (!password.empty()) {
    if (options_.username.empty()) {
      out.Write({"AUTH", password});
    } else {
      out.Write({"AUTH", options_.username, password});
    }
    pending_.push_back({Pending::Kind::kHandshake});
  }
  if (options_.db != 0) {
    out.Write({"SELECT", std::to_string(options_.db)});
    pending_.push_back({Pending::Kind::kHandshake});
  }
  if (locator_->ConfirmsMaster()) {
    out.Write({"ROLE"});
    pending_.push_back({Pending::Kind::kRole});
  }
  WriteLoad();
  pending_.back().kind = Pending::Kind::kHandshake;
  Flush();
}

// Every script (each reply names its digest), or the library with every function.
void CallPipeline::WriteLoad() {
  RespWriter out(out_);
  if (options_.mode == ScriptMode::kEvalsha) {
    for (Algorithm algorithm : kAlgorithms) {
      out.Write({"SCRIPT", "LOAD", BucketScript(algorithm, options_.layout)});
      pending_.push_back({Pending::Kind::kLoad, {}, algorithm});
    }
  } else {
    out.Write({"FUNCTION", "LOAD", "REPLACE", function_library_});
    pending_.push_back({Pending::Kind::kLoad});
  }
  script_loads_.fetch_add(1, std::memory_order_relaxed);
}

void CallPipeline::BecomeReady() {
  link_.Ready();
  connects_.fetch_add(1, std::memory_order_relaxed);
  SetReady(true);
  std::deque<CheckPtr> waiting = std::move(waiting_);
  waiting_.clear();
  waiting_ops_ = 0;
  for (CheckPtr& check : waiting) Gather(std::move(check));
  Flush();
}

void CallPipeline::OnLost(const std::string& reason) {
  SetReady(false, reason);
  FailAll(reason);
}

// A hint that the master moved: a connection to another server is dropped, failing the calls it
// carries (they may have been applied, so they are never sent again), and the next connection
// asks where the master is. An asking under way asks again; a link in backoff asks anyway.
void CallPipeline::OnMoved(const NodeAddress& now) {
  if (link_.Locating()) return link_.LocateAgain();
  const RedisLink::State state = link_.state();
  if (state != RedisLink::State::kReady && state != RedisLink::State::kConnecting) return;
  const NodeAddress& connected = link_.address();
  if (connected.host == now.host && connected.port == now.port) return;
  link_.Drop("the sentinels moved the master to " + now.ToString());
}

void CallPipeline::FailAll(const std::string& reason) {
  const Status unsent = Status::Unavailable(reason);
  const Status unknown =
      Status::DeadlineExceeded(reason + " (no answer to a call sent: it may have been applied)");
  for (const Pending& p : pending_) FinishEach(p.checks, p.written ? unknown : unsent);
  pending_.clear();
  for (CheckPtr& check : waiting_) check->Finish(unsent);
  waiting_.clear();
  waiting_ops_ = 0;
  for (std::vector<CheckPtr>& checks : gathered_) {
    FinishEach(checks, unsent);
    checks.clear();
  }
  gathered_ops_ = 0;
  out_.clear();
  writing_ = false;  // the aborted write's handler belongs to an old connection and never runs
  waiters_.clear();
  waiters_need_ = {};
  ops_in_flight_ = 0;
  calls_awaited_ = 0;
  reload_queued_ = false;
  idle_since_write_ = true;
}

void CallPipeline::Shutdown() {
  {
    std::lock_guard lock(submit_mutex_);
    stopped_ = true;
  }
  DrainSubmitted();
  link_.Stop();
  deadline_timer_.cancel();
  SetReady(false);
  FailAll("the redis store is stopped");
}

void CallPipeline::SetReady(bool ready, const std::string& why) {
  {
    std::lock_guard lock(ready_mutex_);
    ready_.store(ready, std::memory_order_release);
    if (!why.empty()) last_error_ = why;
  }
  ready_changed_.notify_all();
}

std::string CallPipeline::LastError() const {
  std::lock_guard lock(ready_mutex_);
  return last_error_;
}

// --- Sending --------------------------------------------------------------------------------

void CallPipeline::DrainSubmitted() {
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

void CallPipeline::Accept(CheckPtr check) {
  switch (link_.state()) {
    case RedisLink::State::kReady:
      if (ops_in_flight_ + gathered_ops_ + check->ops.size() > options_.max_in_flight) {
        return check->Finish(Status::ResourceExhausted(
            "more than " + std::to_string(options_.max_in_flight) + " operations in flight"));
      }
      deadlines_.push(check);
      return Gather(std::move(check));
    case RedisLink::State::kConnecting:
      if (waiting_ops_ + check->ops.size() > options_.max_in_flight) {
        return check->Finish(Status::ResourceExhausted(
            "more than " + std::to_string(options_.max_in_flight) + " operations waiting"));
      }
      waiting_ops_ += check->ops.size();
      deadlines_.push(check);
      waiting_.push_back(std::move(check));
      return;
    case RedisLink::State::kBackoff:
    case RedisLink::State::kStopped:
      return check->Finish(Status::Unavailable(link_.last_error()));
  }
}

// Holds a check for the script call that the next write carries: one call for the checks of
// an algorithm that arrive before it, on a cluster node whatever their slots. A check sent with
// ASKING goes alone, since ASKING admits only the command after it.
void CallPipeline::Gather(CheckPtr check) {
  if (check->asking) return Send({std::move(check)});
  gathered_ops_ += check->ops.size();
  gathered_[Index(check->algorithm)].push_back(std::move(check));
}

void CallPipeline::SendGathered() {
  for (std::vector<CheckPtr>& checks : gathered_) {
    std::vector<CheckPtr> call;
    size_t ops = 0;
    for (CheckPtr& check : checks) {
      if (!call.empty() && ops + check->ops.size() > kMaxOpsPerCall) {
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

// One script call for the buckets of `checks` (one algorithm): their keys, then four numbers
// for each, then each check's codes when any is needed; ASKING before it when the check asks
// for it. Checks of several cluster slots declare only the first check's keys, and the others
// follow the codes (calls.lua). A check whose time is up is not sent: the server would charge it
// and the caller would hear only the timeout.
void CallPipeline::Send(std::vector<CheckPtr> checks) {
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
  const bool across_slots = SpansSlots(checks);
  const size_t declared = across_slots ? checks.front()->ops.size() : count;
  // A lone check of plain ops needs no codes, so the commonest call carries none.
  const bool plain = checks.size() == 1 && codes.find_first_not_of('0') == std::string::npos;
  RespWriter out(out_);
  if (checks.front()->asking) {
    out.Write({"ASKING"});
    pending_.push_back({Pending::Kind::kAsking});
  }
  out.Command(3 + 5 * count + (plain ? 0 : 1));
  const Algorithm algorithm = checks.front()->algorithm;
  if (options_.mode == ScriptMode::kEvalsha) {
    out.Arg("EVALSHA").Arg(script_sha_[Index(algorithm)]);
  } else {
    out.Arg("FCALL").Arg(FunctionName(algorithm, options_.layout));
  }
  out.Arg(static_cast<int64_t>(declared));
  auto keys = [&out](auto first, auto last) {
    for (; first != last; ++first) {
      for (const BucketOp& op : (*first)->ops) out.Arg(op.key);
    }
  };
  const auto undeclared = checks.begin() + (across_slots ? 1 : checks.size());
  keys(checks.begin(), undeclared);
  for (const CheckPtr& check : checks) {
    for (const BucketOp& op : check->ops) {
      out.Arg(op.limit.capacity).Arg(op.limit.tokens).Arg(op.limit.period_ms).Arg(op.cost);
    }
  }
  if (!plain) out.Arg(codes);
  keys(undeclared, checks.end());
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
void CallPipeline::WriteWait() {
  if (waiters_.empty()) return;
  RespWriter(out_).Write(
      {"WAIT", std::to_string(waiters_need_.replicas), std::to_string(waiters_need_.timeout_ms)});
  pending_.push_back({Pending::Kind::kWait, std::move(waiters_)});
  waiters_.clear();
  waiters_need_ = {};
}

// Writes everything queued in one socket write; what queues meanwhile goes in the next one.
// Gathered checks wait while kMaxCallsAwaited calls are unanswered: the next answer flushes.
// While connecting, only the handshake is written.
void CallPipeline::Flush() {
  const RedisLink::State state = link_.state();
  if (writing_ || state == RedisLink::State::kBackoff || state == RedisLink::State::kStopped) {
    return;
  }
  if (state == RedisLink::State::kReady && calls_awaited_ < kMaxCallsAwaited) SendGathered();
  if (out_.empty()) return;
  WriteWait();
  for (auto p = pending_.rbegin(); p != pending_.rend() && !p->written; ++p) p->written = true;
  writing_ = true;
  writing_buffer_.swap(out_);
  out_.clear();
  if (idle_since_write_) {
    last_write_ = Clock::now();
    idle_since_write_ = false;
  }
  writes_.fetch_add(1, std::memory_order_relaxed);
  link_.Write(writing_buffer_, [this, self = shared_from_this()] {
    writing_ = false;
    Flush();
  });
}

// Whether `checks` hold keys of more than one cluster slot.
bool CallPipeline::SpansSlots(const std::vector<CheckPtr>& checks) {
  return std::any_of(checks.begin(), checks.end(),
                     [&checks](const CheckPtr& c) { return c->slot != checks.front()->slot; });
}

// --- Receiving ------------------------------------------------------------------------------

// Handles every complete reply, then writes what they freed room for.
void CallPipeline::OnData() {
  const uint64_t gen = link_.generation();
  for (;;) {
    Result<ReplyPtr> next = link_.NextReply();
    if (!next.ok()) return link_.Drop(next.status().message());
    if (*next == nullptr) break;
    if (pending_.empty()) return link_.Drop("unexpected reply from " + link_.Where());
    Pending p = std::move(pending_.front());
    pending_.pop_front();
    // A freed place goes to the waiting checks at once, before this call's checks resume their
    // requests (which may take a while), so that Redis works meanwhile.
    if (p.kind == Pending::Kind::kBucket && calls_awaited_-- == kMaxCallsAwaited) Flush();
    if (pending_.empty()) idle_since_write_ = true;
    OnReply(p, **next);
    if (gen != link_.generation()) return;
  }
  Flush();
}

void CallPipeline::OnReply(Pending& p, const redisReply& reply) {
  switch (p.kind) {
    case Pending::Kind::kHandshake:
    case Pending::Kind::kLoad:
      return OnSetupReply(p, reply);
    case Pending::Kind::kRole:
      return OnRoleReply(reply);
    case Pending::Kind::kAsking:
      return;  // an error here shows again, and is handled, in the call's own reply
    case Pending::Kind::kBucket:
      return OnBucketReply(p, reply);
    case Pending::Kind::kWait:
      return OnWaitReply(p, reply);
  }
}

void CallPipeline::OnSetupReply(const Pending& p, const redisReply& reply) {
  if (IsError(reply)) {
    return link_.Drop(link_.Where() +
                      " refused the connection's setup: " + std::string(Text(reply)));
  }
  if (options_.mode == ScriptMode::kEvalsha && reply.type == REDIS_REPLY_STRING) {
    script_sha_[Index(p.algorithm)].assign(reply.str, static_cast<size_t>(reply.len));
  }
  if (p.kind == Pending::Kind::kLoad) reload_queued_ = false;
  const bool last_setup_reply =
      std::none_of(pending_.begin(), pending_.end(), [](const Pending& q) {
        return q.kind == Pending::Kind::kHandshake || q.kind == Pending::Kind::kRole;
      });
  if (p.kind == Pending::Kind::kHandshake && link_.state() == RedisLink::State::kConnecting &&
      last_setup_reply) {
    BecomeReady();
  }
}

// ROLE's first element is "master" on a master; anything else (a replica a failover left
// behind, a server still loading) is not where checks may go: look again after a backoff.
void CallPipeline::OnRoleReply(const redisReply& reply) {
  std::string_view role;
  if (reply.type == REDIS_REPLY_ARRAY && reply.elements > 0) role = Text(*reply.element[0]);
  if (role == "master") return;
  link_.Drop(link_.Where() + " is not a master (its role is " +
             (role.empty() ? std::string("unknown") : std::string(role)) +
             "); asking the sentinels again");
}

void CallPipeline::FinishEach(const std::vector<CheckPtr>& checks, const Status& error) {
  for (const CheckPtr& check : checks) check->Finish(error);
}

void CallPipeline::OnBucketReply(const Pending& p, const redisReply& reply) {
  size_t count = 0;
  for (const CheckPtr& check : p.checks) {
    ops_in_flight_ -= check->ops.size();
    count += check->ops.size();
  }
  if (IsError(reply)) {
    const std::string_view error = Text(reply);
    if (IsMissingCode(error)) return Resend(p.checks, error);
    if (p.checks.size() > 1 && IsRedirection(error)) {
      // The call never ran; each check's own keys decide where it belongs.
      for (const CheckPtr& check : p.checks) Send({check});
      return;
    }
    FinishEach(p.checks, Status::StoreError(std::string(error)));
    // A master that a failover made a replica refuses writes: find the master again.
    if (IsReadOnly(error)) link_.Drop(link_.Where() + " is read-only now: " + std::string(error));
    return;
  }
  if (!IsBucketCallReply(reply, count)) {
    return FinishEach(p.checks, Status::StoreError("unexpected reply to the bucket script"));
  }
  size_t offset = 0;
  for (const CheckPtr& check : p.checks) {
    const size_t at = std::exchange(offset, offset + kRepliesPerOp * check->ops.size());
    if (check->finished) continue;  // timed out while the call was on its way
    Result<std::vector<BucketReply>> replies = ParseBucketReplies(reply, at, check->ops);
    if (!replies.ok() && p.checks.size() > 1 && IsNotHeldHere(replies.status().message())) {
      Send({check});  // alone, it declares its keys: the node answers where they are
      continue;
    }
    if (replies.ok() && check->wait.replicas > 0) {
      check->replies = std::move(replies).value();  // answered when WAIT is
      continue;
    }
    check->Finish(std::move(replies));
  }
}

// The decisions stand whatever WAIT says; a wait that ended short is only counted. A check
// whose call got NOSCRIPT has no replies yet and is left to the WAIT behind its resent call.
void CallPipeline::OnWaitReply(const Pending& p, const redisReply& reply) {
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
void CallPipeline::Resend(std::vector<CheckPtr> checks, std::string_view error) {
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

// --- Deadlines ------------------------------------------------------------------------------

// One timer for every check, set for the soonest of the soonest deadline and the stall limit,
// and moved earlier when a check arrives whose deadline comes first.
void CallPipeline::ArmDeadlineTimer() {
  if (link_.state() == RedisLink::State::kStopped) return;
  while (!deadlines_.empty() && deadlines_.top()->finished) deadlines_.pop();
  std::optional<Clock::time_point> next;
  if (!deadlines_.empty()) next = deadlines_.top()->deadline;
  if (!pending_.empty()) {
    auto stall = std::max(link_.last_read(), last_write_) + StallLimit();
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
        if (ec || link_.state() == RedisLink::State::kStopped) return;
        ExpireChecks();
        ArmDeadlineTimer();
      });
}

void CallPipeline::ExpireChecks() {
  const auto now = Clock::now();
  while (!deadlines_.empty() && (deadlines_.top()->finished || deadlines_.top()->deadline <= now)) {
    CheckPtr check = deadlines_.top();
    deadlines_.pop();
    TimeOut(*check);
  }
  // A server that has stopped answering (hung, paused, a dead peer that sent no FIN) is
  // dropped so that the link can find it again.
  if (!pending_.empty() && now - std::max(link_.last_read(), last_write_) >= StallLimit()) {
    link_.Drop("no reply from " + link_.Where() + " for " + std::to_string(StallLimit().count()) +
               " ms");
  }
}

void CallPipeline::TimeOut(Check& check) {
  if (check.finished) return;
  timeouts_.fetch_add(1, std::memory_order_relaxed);
  check.Finish(Status::DeadlineExceeded("no answer from " + link_.Where() + " in time (timeout " +
                                        std::to_string(options_.timeout.count()) + " ms)"));
}

std::chrono::milliseconds CallPipeline::StallLimit() const {
  return std::max<std::chrono::milliseconds>(std::chrono::seconds(1), 10 * options_.timeout);
}

}  // namespace sluice::redis
