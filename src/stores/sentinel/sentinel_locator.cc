#include "sentinel_locator.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "tls_context.h"

namespace sluice::redis {

namespace asio = boost::asio;
using std::chrono::milliseconds;

namespace {

// The guidelines' "short timeout" for each sentinel: a dead one must not hold up the next.
constexpr milliseconds kMaxAskTimeout{500};
// How often the subscription's sentinel is pinged, so that a dead one is noticed.
constexpr milliseconds kPingInterval{1000};
// The wait before subscribing again, on another sentinel, after a subscription ends.
constexpr milliseconds kResubscribeDelay{1000};
// Sentinels learnt from others, at most: a list that only grows is bounded.
constexpr size_t kMaxSentinels = 64;

std::optional<uint16_t> PortOf(std::string_view text) {
  unsigned port = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (ec != std::errc() || end != text.data() + text.size() || port == 0 || port > 65535) {
    return std::nullopt;
  }
  return static_cast<uint16_t>(port);
}

std::string_view FieldOf(const redisReply& map, std::string_view name) {
  const redisReply* value = MapField(map, name);
  return value != nullptr ? Text(*value) : std::string_view();
}

}  // namespace

SentinelLocator::SentinelLocator(asio::io_context& io, const RedisOptions& options,
                                 std::shared_ptr<RedisCredentials> credentials)
    : io_(io),
      options_(*options.sentinel),
      server_name_(options.tls ? options.tls->server_name : ""),
      credentials_(std::move(credentials)),
      ask_timeout_(std::min(options.connect_timeout, kMaxAskTimeout)),
      sentinels_(options_.sentinels.begin(), options_.sentinels.end()),
      clock_(ClockOrSteady(options.clock)),
      subscribe_timer_(io, clock_),
      ping_timer_(io, clock_) {}

NodeAddress SentinelLocator::AddressOf(const HostPort& node) const {
  NodeAddress address{node.first, node.second, "", ""};
  // A configured sentinel is verified as server_name when that is set, else as its host; a
  // discovered node (the master, a sentinel another named) as its announced hostname when it
  // has one, else server_name, else its address.
  const bool configured = std::find(options_.sentinels.begin(), options_.sentinels.end(), node) !=
                          options_.sentinels.end();
  if (!server_name_.empty() && (configured || IsIpAddress(node.first))) {
    address.tls_name = server_name_;
  }
  return address;
}

std::vector<std::vector<std::string>> SentinelLocator::WithAuth(
    std::vector<std::vector<std::string>> commands) {
  const std::string password = credentials_->SentinelPassword();
  if (password.empty()) return commands;
  std::vector<std::string> auth = {"AUTH"};
  if (!options_.username.empty()) auth.push_back(options_.username);
  auth.push_back(password);
  commands.insert(commands.begin(), std::move(auth));
  return commands;
}

// The order is the list's when the asking began: another connection's answer may reorder the
// list meanwhile.
void SentinelLocator::Locate(Done done) {
  auto order = std::make_shared<const std::vector<HostPort>>(sentinels_.begin(), sentinels_.end());
  Ask(std::move(order), 0, std::move(done), "");
}

void SentinelLocator::Ask(std::shared_ptr<const std::vector<HostPort>> order, size_t next,
                          Done done, std::string errors) {
  if (stopped_) return done(Status::Unavailable("the sentinel store is stopped"));
  if (next >= order->size()) {
    return done(Status::Unavailable("no sentinel named the master \"" + options_.master + "\" (" +
                                    errors + ")"));
  }
  auto client =
      CommandClient::Connect(io_, AddressOf((*order)[next]), credentials_, ask_timeout_, clock_);
  SendAll(
      *client,
      WithAuth({{"SENTINEL", "get-master-addr-by-name", options_.master},
                {"SENTINEL", "sentinels", options_.master}}),
      [self = shared_from_this(), client, order = std::move(order), next, done = std::move(done),
       errors = std::move(errors)](std::vector<Result<ReplyPtr>> replies) mutable {
        client->Close();
        self->OnAnswer(std::move(order), next, std::move(replies), std::move(done),
                       std::move(errors));
      });
}

void SentinelLocator::OnAnswer(std::shared_ptr<const std::vector<HostPort>> order, size_t index,
                               std::vector<Result<ReplyPtr>> replies, Done done,
                               std::string errors) {
  if (stopped_) return done(Status::Unavailable("the sentinel store is stopped"));
  const HostPort& asked = (*order)[index];
  std::string why;
  for (const Result<ReplyPtr>& reply : replies) {
    if (!reply.ok()) {
      why = reply.status().message();
    } else if (IsError(**reply)) {
      why = std::string(Text(**reply));
    }
    if (!why.empty()) break;
  }
  const redisReply* master = why.empty() ? replies[replies.size() - 2]->get() : nullptr;
  std::optional<uint16_t> port;
  if (master != nullptr && master->type == REDIS_REPLY_ARRAY && master->elements == 2) {
    port = PortOf(Text(*master->element[1]));
  }
  if (!port) {
    if (why.empty()) why = "does not know the master";
    errors += (errors.empty() ? "" : "; ") + asked.first + ":" + std::to_string(asked.second) +
              ": " + why;
    return Ask(std::move(order), index + 1, std::move(done), std::move(errors));
  }
  MoveToFront(asked);
  LearnSentinels(**replies.back());
  done(AddressOf({std::string(Text(*master->element[0])), *port}));
}

// A sentinel that answered (or announced a failover) is asked first from now on: it is up, and
// it knows the latest configuration.
void SentinelLocator::MoveToFront(const HostPort& sentinel) {
  if (auto it = std::find(sentinels_.begin(), sentinels_.end(), sentinel); it != sentinels_.end()) {
    sentinels_.erase(it);
    sentinels_.push_front(sentinel);
  }
}

// SENTINEL sentinels: the other sentinels of this master, each a map with "ip" and "port".
void SentinelLocator::LearnSentinels(const redisReply& reply) {
  if (reply.type != REDIS_REPLY_ARRAY) return;
  for (size_t i = 0; i < reply.elements && sentinels_.size() < kMaxSentinels; ++i) {
    const std::string_view ip = FieldOf(*reply.element[i], "ip");
    const std::optional<uint16_t> port = PortOf(FieldOf(*reply.element[i], "port"));
    if (ip.empty() || !port) continue;
    HostPort sentinel{std::string(ip), *port};
    if (std::find(sentinels_.begin(), sentinels_.end(), sentinel) == sentinels_.end()) {
      sentinels_.push_back(std::move(sentinel));
    }
  }
}

void SentinelLocator::Watch(const std::function<void(const NodeAddress&)>& moved) {
  moved_ = moved;
  Subscribe();
}

// On the sentinel at `subscribe_next_` in the list: the front one (the last to answer) after a
// subscription was confirmed, the ones behind it in turn after each that failed.
void SentinelLocator::Subscribe() {
  if (stopped_ || !moved_ || subscription_ || sentinels_.empty()) return;
  const HostPort target = sentinels_[subscribe_next_ % sentinels_.size()];
  subscription_ =
      CommandClient::Connect(io_, AddressOf(target), credentials_, ask_timeout_, clock_);
  std::weak_ptr<SentinelLocator> weak = shared_from_this();
  subscription_->Listen(
      [weak, target](const redisReply& message) {
        if (auto self = weak.lock()) self->OnSwitch(target, message);
      },
      [weak](const std::string&) {
        auto self = weak.lock();
        if (!self || self->stopped_) return;
        self->subscription_.reset();
        ++self->subscribe_next_;  // another sentinel next time
        self->subscribe_timer_.expires_after(kResubscribeDelay);
        self->subscribe_timer_.async_wait([weak](const boost::system::error_code& ec) {
          if (auto self = weak.lock(); self && !ec) self->Subscribe();
        });
      });
  for (const auto& command : WithAuth({{"SUBSCRIBE", "+switch-master"}})) {
    const bool subscribing = command.front() == "SUBSCRIBE";
    subscription_->Send(command, [weak, target, subscribing](const Result<ReplyPtr>& reply) {
      auto self = weak.lock();
      if (!self || !self->subscription_ || !reply.ok()) return;
      if (IsError(**reply)) return self->subscription_->Close();
      if (subscribing) self->OnSubscribed(target);
    });
  }
  Ping();
}

// A switch announced while no subscription was up went unheard, and the old master may take
// writes for seconds yet: the sentinel now listened to is asked where the master is, and its
// answer passed on as a hint like a +switch-master.
void SentinelLocator::OnSubscribed(const HostPort& sentinel) {
  subscribe_next_ = 0;
  MoveToFront(sentinel);
  Locate([weak = weak_from_this()](Result<NodeAddress> where) {
    auto self = weak.lock();
    if (self && !self->stopped_ && self->moved_ && where.ok()) self->moved_(*where);
  });
}

void SentinelLocator::Ping() {
  ping_timer_.expires_after(kPingInterval);
  ping_timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
    auto self = weak.lock();
    if (ec || !self || self->stopped_ || !self->subscription_) return;
    self->subscription_->Send({"PING"}, [](const Result<ReplyPtr>&) {});
    self->Ping();
  });
}

// "+switch-master <master> <old ip> <old port> <new ip> <new port>", from `sentinel`: the next
// Locate asks it first, since other sentinels may name the old master for a while yet.
void SentinelLocator::OnSwitch(const HostPort& sentinel, const redisReply& message) {
  std::istringstream words{std::string(Text(*message.element[message.elements - 1]))};
  std::string name;
  std::string old_ip;
  std::string old_port;
  std::string new_ip;
  std::string new_port;
  if (!(words >> name >> old_ip >> old_port >> new_ip >> new_port) || name != options_.master) {
    return;
  }
  const std::optional<uint16_t> port = PortOf(new_port);
  if (!port) return;
  MoveToFront(sentinel);
  if (moved_) moved_(AddressOf({new_ip, *port}));
}

void SentinelLocator::Stop() {
  stopped_ = true;
  subscribe_timer_.cancel();
  ping_timer_.cancel();
  if (subscription_) subscription_->Close();
  subscription_.reset();
  moved_ = nullptr;
}

}  // namespace sluice::redis
