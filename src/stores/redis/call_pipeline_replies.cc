// CallPipeline's replies: matched to the FIFO of what was written, and what each kind of reply
// does (a script call's replies to its submissions, NOSCRIPT, redirections, ROLE, WAIT).
#include <algorithm>
#include <string>

#include "call_pipeline.h"

namespace sluice::redis {

namespace {

// A NOSCRIPT answer is followed by a reload and a resend; twice in a row for one operation
// means something else is wrong, and the call's ops fail instead of looping.
constexpr int kMaxResends = 2;

}  // namespace

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
    // A freed place goes to the waiting submissions at once, before this call's submissions resume
    // their requests (which may take a while), so that Redis works meanwhile.
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
// behind, a server still loading) is not where submissions may go: look again after a backoff.
void CallPipeline::OnRoleReply(const redisReply& reply) {
  std::string_view role;
  if (reply.type == REDIS_REPLY_ARRAY && reply.elements > 0) role = Text(*reply.element[0]);
  if (role == "master") return;
  link_.Drop(link_.Where() + " is not a master (its role is " +
             (role.empty() ? std::string("unknown") : std::string(role)) +
             "); asking the sentinels again");
}

void CallPipeline::FinishEach(const std::vector<SubmissionPtr>& submissions, const Status& error) {
  for (const SubmissionPtr& submission : submissions) submission->Finish(error);
}

void CallPipeline::OnBucketReply(const Pending& p, const redisReply& reply) {
  size_t count = 0;
  for (const SubmissionPtr& submission : p.submissions) {
    ops_in_flight_ -= submission->ops.size();
    count += submission->ops.size();
  }
  if (IsError(reply)) {
    const std::string_view error = Text(reply);
    if (IsMissingCode(error)) return Resend(p.submissions, error);
    if (p.submissions.size() > 1 && IsRedirection(error)) {
      // The call never ran; each submission's own keys decide where it belongs.
      for (const SubmissionPtr& submission : p.submissions) Send({submission});
      return;
    }
    FinishEach(p.submissions, Status::StoreError(std::string(error)));
    // A master that a failover made a replica refuses writes: find the master again.
    if (IsReadOnly(error)) link_.Drop(link_.Where() + " is read-only now: " + std::string(error));
    return;
  }
  if (!IsBucketCallReply(reply, count)) {
    return FinishEach(p.submissions, Status::StoreError("unexpected reply to the bucket script"));
  }
  size_t offset = 0;
  for (const SubmissionPtr& submission : p.submissions) {
    const size_t at = std::exchange(offset, offset + kRepliesPerOp * submission->ops.size());
    if (submission->finished) continue;  // timed out while the call was on its way
    Result<std::vector<BucketReply>> replies = ParseBucketReplies(reply, at, submission->ops);
    if (!replies.ok() && p.submissions.size() > 1 && IsNotHeldHere(replies.status().message())) {
      Send({submission});  // alone, it declares its keys: the node answers where they are
      continue;
    }
    if (replies.ok() && submission->wait.replicas > 0) {
      submission->replies = std::move(replies).value();  // answered when WAIT is
      continue;
    }
    submission->Finish(std::move(replies));
  }
}

// The decisions stand whatever WAIT says; a wait that ended short is only counted. A submission
// whose call got NOSCRIPT has no replies yet and is left to the WAIT behind its resent call.
void CallPipeline::OnWaitReply(const Pending& p, const redisReply& reply) {
  int needed = 0;
  for (const SubmissionPtr& submission : p.submissions)
    needed = std::max(needed, submission->wait.replicas);
  if (reply.type != REDIS_REPLY_INTEGER || reply.integer < needed) {
    short_waits_.fetch_add(1, std::memory_order_relaxed);
  }
  for (const SubmissionPtr& submission : p.submissions) {
    if (!submission->finished && submission->replies)
      submission->Finish(std::move(*submission->replies));
  }
}

// The server lost the script: load it again (once for all the calls that noticed), then send
// the call's submissions again behind the load. They never ran, so each is sent exactly once more.
void CallPipeline::Resend(std::vector<SubmissionPtr> submissions, std::string_view error) {
  std::erase_if(submissions, [&error](const SubmissionPtr& submission) {
    if (++submission->resends <= kMaxResends) return submission->finished;
    submission->Finish(Status::StoreError("still " + std::string(error) + " after reloading"));
    return true;
  });
  if (!reload_queued_) {
    WriteLoad();
    reload_queued_ = true;
  }
  Send(std::move(submissions));
}

}  // namespace sluice::redis
