#include "slot_map_reader.h"

#include <algorithm>

#include "command_client.h"

namespace sluice::cluster {

using std::chrono::milliseconds;

namespace {

// The longest wait between reads while they fail.
constexpr milliseconds kMaxGap{2000};

}  // namespace

SlotMapReader::SlotMapReader(boost::asio::io_context& io, const ClusterOptions& options,
                             std::shared_ptr<RedisCredentials> credentials, OnSlotMap on_map)
    : io_(io),
      options_(options),
      credentials_(std::move(credentials)),
      on_map_(std::move(on_map)),
      timer_(io, options.clock),
      gap_(options.refresh_min_gap) {}

void SlotMapReader::Start() { Schedule(); }

void SlotMapReader::Request() {
  wanted_ = true;
  Schedule();
}

void SlotMapReader::Stop() {
  stopped_ = true;
  timer_.cancel();
}

// The next read: the first at once; then the least gap after the last when one is wanted,
// else the refresh interval after it. A read under way schedules the next when it ends.
void SlotMapReader::Schedule() {
  if (stopped_ || reading_) return;
  Clock::TimePoint at = timer_.clock().Now();
  if (last_read_) at = *last_read_ + (wanted_ ? gap_ : options_.refresh_interval);
  timer_.expires_at(at);  // an earlier wait ends with an error and does nothing
  timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
    if (auto self = weak.lock(); self && !ec && !self->stopped_) self->Read();
  });
}

void SlotMapReader::Read() {
  reading_ = true;
  wanted_ = false;
  Ask(Candidates(), 0);
}

std::vector<HostPort> SlotMapReader::Candidates() {
  std::vector<HostPort> candidates = primaries_;
  candidates.insert(candidates.end(), options_.seeds.begin(), options_.seeds.end());
  std::shuffle(candidates.begin(), candidates.end(), rng_);
  if (last_answered_) {
    if (auto it = std::find(candidates.begin(), candidates.end(), *last_answered_);
        it != candidates.end()) {
      std::iter_swap(candidates.begin(), it);
    }
  }
  return candidates;
}

void SlotMapReader::Ask(std::vector<HostPort> candidates, size_t next) {
  if (stopped_) return;
  if (next == candidates.size()) {  // nobody answered: keep trying, more slowly
    ++reads_;
    gap_ = std::min(gap_ * 2, kMaxGap);
    wanted_ = true;
    reading_ = false;
    last_read_ = timer_.clock().Now();
    return Schedule();
  }
  const HostPort node = candidates[next];
  const bool tls = options_.tls.has_value();
  redis::NodeAddress address{node.first, node.second, "", tls ? options_.tls->server_name : ""};
  auto client = redis::CommandClient::Connect(io_, address, credentials_, options_.connect_timeout,
                                              options_.clock);
  std::vector<std::vector<std::string>> commands;
  if (const std::string password = credentials_->Password(); !password.empty()) {
    commands.push_back(options_.username.empty()
                           ? std::vector<std::string>{"AUTH", password}
                           : std::vector<std::string>{"AUTH", options_.username, password});
  }
  commands.push_back({"CLUSTER", "SHARDS"});
  commands.push_back({"CLUSTER", "SLOTS"});
  redis::SendAll(*client, commands,
                 [self = shared_from_this(), client, candidates = std::move(candidates), next, node,
                  tls](std::vector<Result<redis::ReplyPtr>> replies) mutable {
                   client->Close();
                   if (self->stopped_) return;
                   const bool answered =
                       std::all_of(replies.begin(), replies.end() - 2,
                                   [](const auto& r) { return r.ok() && !redis::IsError(**r); });
                   const Result<redis::ReplyPtr>& shards = replies[replies.size() - 2];
                   const Result<redis::ReplyPtr>& slots = replies.back();
                   Result<std::vector<SlotRange>> map = Status::Unavailable("no answer");
                   if (answered && shards.ok() && !redis::IsError(**shards)) {
                     map = ParseClusterShards(**shards, node.first, tls);
                   } else if (answered && slots.ok() && !redis::IsError(**slots)) {
                     map = ParseClusterSlots(**slots, node.first);
                   }
                   if (!map.ok() || map->empty()) return self->Ask(std::move(candidates), next + 1);
                   ++self->reads_;
                   self->last_answered_ = node;
                   self->gap_ = self->options_.refresh_min_gap;
                   self->reading_ = false;
                   // Jitter, so that the gateways (and the loops of one gateway) spread their
                   // reads.
                   self->last_read_ =
                       self->timer_.clock().Now() +
                       milliseconds(std::uniform_int_distribution<int64_t>(
                           0, self->options_.refresh_min_gap.count() / 2)(self->rng_));
                   self->on_map_(std::move(map).value());
                   self->Schedule();
                 });
}

}  // namespace sluice::cluster
