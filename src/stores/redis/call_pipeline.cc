#include "call_pipeline.h"

#include <algorithm>
#include <boost/asio/post.hpp>

#include "resp_writer.h"
#include "sentinel_locator.h"

namespace sluice::redis {

namespace asio = boost::asio;

namespace {

// Checks gathered in one script call share Redis's per-call cost (the call, the clock, a read
// and a write per key however many checks take from it); the cap bounds how long one call
// holds the server, which serves no one else meanwhile: about 5 us an op on distinct keys, so
// some 0.3 ms, while 64 checks already pay the per-call cost a sixty-fourth each.
constexpr size_t kMaxOpsPerCall = 64;

LinkOptions LinkOptionsOf(const RedisOptions& options) {
  return {options.connect_timeout, options.reconnect_min, options.reconnect_max, true,
          options.clock};
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

bool CallPipeline::LaterDeadline::operator()(const SubmissionPtr& a, const SubmissionPtr& b) const {
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
      deadline_timer_(io_, options_.clock) {}

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
  auto submission = std::make_shared<Submission>();
  submission->ops = std::move(ops);
  submission->done = std::move(done);
  submission->asking = call.asking;
  submission->all_or_nothing = call.all_or_nothing;
  submission->slot = call.slot;
  submission->algorithm = submission->ops.front().algorithm;
  submission->clock = &deadline_timer_.clock();
  submission->submitted = submission->clock->Now();
  submission->round_trips = &round_trips_;
  submission->deadline = submission->submitted + options_.timeout;
  if (call.deadline) submission->deadline = std::min(submission->deadline, *call.deadline);
  for (const BucketOp& op : submission->ops) {
    submission->wait.replicas = std::max(submission->wait.replicas, op.wait.replicas);
    submission->wait.timeout_ms = std::max(submission->wait.timeout_ms, op.wait.timeout_ms);
  }
  {
    MutexLock lock(&submit_mutex_);
    if (!stopped_) {
      submitted_.push_back(std::move(submission));
      if (!drain_posted_) {
        drain_posted_ = true;
        asio::post(io_, [self = shared_from_this()] { self->DrainSubmitted(); });
      }
      return;
    }
  }
  submission->done(Status::Unavailable("the redis store is stopped"));
}

bool CallPipeline::WaitReady(std::chrono::milliseconds timeout) const {
  // The caller waits in real time, whatever clock the pipeline's own timeouts are on.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(&ready_mutex_);
  while (!Ready()) {
    if (!ready_changed_.WaitUntil(&ready_mutex_, deadline)) return Ready();
  }
  return true;
}

RedisStoreStats CallPipeline::Stats() const {
  auto get = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  return {get(connects_), get(script_loads_), get(commands_),
          get(writes_),   get(timeouts_),     get(short_waits_)};
}

// --- Connecting -----------------------------------------------------------------------------

// AUTH, SELECT, ROLE (when the locator asks for it) and the script load go out together;
// submissions wait for their answers.
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
  std::deque<SubmissionPtr> waiting = std::move(waiting_);
  waiting_.clear();
  waiting_ops_ = 0;
  for (SubmissionPtr& submission : waiting) Gather(std::move(submission));
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
  for (const Pending& p : pending_) FinishEach(p.submissions, p.written ? unknown : unsent);
  pending_.clear();
  for (SubmissionPtr& submission : waiting_) submission->Finish(unsent);
  waiting_.clear();
  waiting_ops_ = 0;
  for (std::vector<SubmissionPtr>& submissions : gathered_) {
    FinishEach(submissions, unsent);
    submissions.clear();
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
    MutexLock lock(&submit_mutex_);
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
    MutexLock lock(&ready_mutex_);
    ready_.store(ready, std::memory_order_release);
    if (!why.empty()) last_error_ = why;
  }
  ready_changed_.SignalAll();
}

std::string CallPipeline::LastError() const {
  MutexLock lock(&ready_mutex_);
  return last_error_;
}

// --- Sending --------------------------------------------------------------------------------

void CallPipeline::DrainSubmitted() {
  std::vector<SubmissionPtr> batch;
  {
    MutexLock lock(&submit_mutex_);
    batch.swap(submitted_);
    drain_posted_ = false;
  }
  for (SubmissionPtr& submission : batch) Accept(std::move(submission));
  Flush();
  ArmDeadlineTimer();
}

void CallPipeline::Accept(SubmissionPtr submission) {
  switch (link_.state()) {
    case RedisLink::State::kReady:
      if (ops_in_flight_ + gathered_ops_ + submission->ops.size() > options_.max_in_flight) {
        return submission->Finish(Status::ResourceExhausted(
            "more than " + std::to_string(options_.max_in_flight) + " operations in flight"));
      }
      deadlines_.push(submission);
      return Gather(std::move(submission));
    case RedisLink::State::kConnecting:
      if (waiting_ops_ + submission->ops.size() > options_.max_in_flight) {
        return submission->Finish(Status::ResourceExhausted(
            "more than " + std::to_string(options_.max_in_flight) + " operations waiting"));
      }
      waiting_ops_ += submission->ops.size();
      deadlines_.push(submission);
      waiting_.push_back(std::move(submission));
      return;
    case RedisLink::State::kBackoff:
    case RedisLink::State::kStopped:
      return submission->Finish(Status::Unavailable(link_.last_error()));
  }
}

// Holds a submission for the script call that the next write carries: one call for the submissions
// of an algorithm that arrive before it, on a cluster node whatever their slots. A submission sent
// with ASKING goes alone, since ASKING admits only the command after it.
void CallPipeline::Gather(SubmissionPtr submission) {
  if (submission->asking) return Send({std::move(submission)});
  gathered_ops_ += submission->ops.size();
  gathered_[Index(submission->algorithm)].push_back(std::move(submission));
}

void CallPipeline::SendGathered() {
  for (std::vector<SubmissionPtr>& submissions : gathered_) {
    std::vector<SubmissionPtr> call;
    size_t ops = 0;
    for (SubmissionPtr& submission : submissions) {
      if (!call.empty() && ops + submission->ops.size() > kMaxOpsPerCall) {
        Send(std::exchange(call, {}));
        ops = 0;
      }
      ops += submission->ops.size();
      call.push_back(std::move(submission));
    }
    if (!call.empty()) Send(std::move(call));
    submissions.clear();
  }
  gathered_ops_ = 0;
}

// A submission whose time is up is not sent: the server would charge it and the caller would
// hear only the timeout.
void CallPipeline::Send(std::vector<SubmissionPtr> submissions) {
  const Clock::TimePoint now = deadline_timer_.clock().Now();
  std::erase_if(submissions, [this, now](const SubmissionPtr& submission) {
    if (!submission->finished && now >= submission->deadline) TimeOut(*submission);
    return submission->finished;
  });
  if (submissions.empty()) return;
  WriteScriptCall(submissions);
  for (const SubmissionPtr& submission : submissions) {
    ops_in_flight_ += submission->ops.size();
    if (submission->wait.replicas > 0) {
      waiters_.push_back(submission);
      waiters_need_.replicas = std::max(waiters_need_.replicas, submission->wait.replicas);
      waiters_need_.timeout_ms = std::max(waiters_need_.timeout_ms, submission->wait.timeout_ms);
    }
  }
  pending_.push_back({Pending::Kind::kBucket, std::move(submissions)});
  ++calls_awaited_;
  commands_.fetch_add(1, std::memory_order_relaxed);
}

// Their keys, then four numbers for each op, then each submission's codes when any is needed;
// ASKING before it when the submission asks for it. Submissions of several cluster slots declare
// only the first one's keys, and the others follow the codes (calls.lua).
void CallPipeline::WriteScriptCall(const std::vector<SubmissionPtr>& submissions) {
  size_t count = 0;
  std::string codes;
  for (const SubmissionPtr& submission : submissions) {
    if (!codes.empty()) codes.push_back(' ');
    AppendCodes(codes, submission->ops, submission->all_or_nothing);
    count += submission->ops.size();
  }
  const bool across_slots = SpansSlots(submissions);
  const size_t declared = across_slots ? submissions.front()->ops.size() : count;
  // A lone submission of plain ops needs no codes, so the commonest call carries none.
  const bool plain = submissions.size() == 1 && codes.find_first_not_of('0') == std::string::npos;
  RespWriter out(out_);
  if (submissions.front()->asking) {
    out.Write({"ASKING"});
    pending_.push_back({Pending::Kind::kAsking});
  }
  out.Command(3 + 5 * count + (plain ? 0 : 1));
  const Algorithm algorithm = submissions.front()->algorithm;
  if (options_.mode == ScriptMode::kEvalsha) {
    out.Arg("EVALSHA").Arg(script_sha_[Index(algorithm)]);
  } else {
    out.Arg("FCALL").Arg(FunctionName(algorithm, options_.layout));
  }
  out.Arg(static_cast<int64_t>(declared));
  const auto undeclared =
      submissions.begin() + static_cast<std::ptrdiff_t>(across_slots ? 1 : submissions.size());
  WriteKeys(out, submissions.begin(), undeclared);
  for (const SubmissionPtr& submission : submissions) {
    for (const BucketOp& op : submission->ops) {
      out.Arg(op.limit.capacity).Arg(op.limit.tokens).Arg(op.limit.period_ms).Arg(op.cost);
    }
  }
  if (!plain) out.Arg(codes);
  WriteKeys(out, undeclared, submissions.end());
}

void CallPipeline::WriteKeys(RespWriter& out, SubmissionIt first, SubmissionIt last) {
  for (; first != last; ++first) {
    for (const BucketOp& op : (*first)->ops) out.Arg(op.key);
  }
}

// One WAIT at the end of a write covers every call before it on the connection: WAIT blocks
// the connection while it waits, so one per submission would queue each behind the last.
void CallPipeline::WriteWait() {
  if (waiters_.empty()) return;
  RespWriter(out_).Write(
      {"WAIT", std::to_string(waiters_need_.replicas), std::to_string(waiters_need_.timeout_ms)});
  pending_.push_back({Pending::Kind::kWait, std::move(waiters_)});
  waiters_.clear();
  waiters_need_ = {};
}

// Writes everything queued in one socket write; what queues meanwhile goes in the next one.
// Gathered submissions wait while kMaxCallsAwaited calls are unanswered: the next answer flushes.
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
    last_write_ = deadline_timer_.clock().Now();
    idle_since_write_ = false;
  }
  writes_.fetch_add(1, std::memory_order_relaxed);
  link_.Write(writing_buffer_, [this, self = shared_from_this()] {
    writing_ = false;
    Flush();
  });
}

// Whether `submissions` hold keys of more than one cluster slot.
bool CallPipeline::SpansSlots(const std::vector<SubmissionPtr>& submissions) {
  return std::any_of(
      submissions.begin(), submissions.end(),
      [&submissions](const SubmissionPtr& c) { return c->slot != submissions.front()->slot; });
}

// --- Deadlines ------------------------------------------------------------------------------

// One timer for every submission, set for the soonest of the soonest deadline and the stall limit,
// and moved earlier when a submission arrives whose deadline comes first.
void CallPipeline::ArmDeadlineTimer() {
  if (link_.state() == RedisLink::State::kStopped) return;
  while (!deadlines_.empty() && deadlines_.top()->finished) deadlines_.pop();
  std::optional<Clock::TimePoint> next;
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
        ExpireSubmissions();
        ArmDeadlineTimer();
      });
}

void CallPipeline::ExpireSubmissions() {
  const Clock::TimePoint now = deadline_timer_.clock().Now();
  while (!deadlines_.empty() && (deadlines_.top()->finished || deadlines_.top()->deadline <= now)) {
    SubmissionPtr submission = deadlines_.top();
    deadlines_.pop();
    TimeOut(*submission);
  }
  // A server that has stopped answering (hung, paused, a dead peer that sent no FIN) is
  // dropped so that the link can find it again.
  if (!pending_.empty() && now - std::max(link_.last_read(), last_write_) >= StallLimit()) {
    link_.Drop("no reply from " + link_.Where() + " for " + std::to_string(StallLimit().count()) +
               " ms");
  }
}

void CallPipeline::TimeOut(Submission& submission) {
  if (submission.finished) return;
  timeouts_.fetch_add(1, std::memory_order_relaxed);
  submission.Finish(Status::DeadlineExceeded("no answer from " + link_.Where() +
                                             " in time (timeout " +
                                             std::to_string(options_.timeout.count()) + " ms)"));
}

std::chrono::milliseconds CallPipeline::StallLimit() const {
  return std::max<std::chrono::milliseconds>(std::chrono::seconds(1), 10 * options_.timeout);
}

}  // namespace sluice::redis
