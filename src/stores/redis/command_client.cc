#include "command_client.h"

#include "resp_writer.h"

namespace sluice::redis {

namespace asio = boost::asio;

namespace {

// A pub/sub delivery rather than the answer to a command.
bool IsMessage(const redisReply& reply) {
  return reply.type == REDIS_REPLY_ARRAY && reply.elements >= 3 &&
         (Text(*reply.element[0]) == "message" || Text(*reply.element[0]) == "pmessage");
}

}  // namespace

std::shared_ptr<CommandClient> CommandClient::Connect(asio::io_context& io, NodeAddress address,
                                                      std::shared_ptr<RedisCredentials> credentials,
                                                      std::chrono::milliseconds timeout,
                                                      std::shared_ptr<const Clock> clock) {
  auto client = std::make_shared<CommandClient>(io, std::move(address), std::move(credentials),
                                                timeout, std::move(clock));
  client->link_.Start(client);
  return client;
}

CommandClient::CommandClient(asio::io_context& io, NodeAddress address,
                             std::shared_ptr<RedisCredentials> credentials,
                             std::chrono::milliseconds timeout, std::shared_ptr<const Clock> clock)
    : timeout_(timeout),
      link_(io, {timeout, timeout, timeout, /*reconnect=*/false, clock},
            std::make_shared<FixedLocator>(std::move(address)), std::move(credentials), *this),
      timer_(io, std::move(clock)) {}

void CommandClient::Send(const std::vector<std::string>& args, ReplyHandler done) {
  if (link_.state() == RedisLink::State::kStopped) {
    return done(Status::Unavailable(link_.last_error()));
  }
  RespWriter out(out_);
  out.Command(args.size());
  for (const std::string& arg : args) out.Arg(arg);
  waiting_.push_back(std::move(done));
  if (waiting_.size() == 1) ArmTimer();
  Flush();
}

void CommandClient::Listen(std::function<void(const redisReply&)> message,
                           std::function<void(const std::string&)> lost) {
  message_ = std::move(message);
  lost_ = std::move(lost);
}

void CommandClient::Close() {
  if (link_.state() == RedisLink::State::kStopped) return;
  link_.Drop("closed");
}

void CommandClient::OnConnected() {
  link_.Ready();
  Flush();
}

void CommandClient::Flush() {
  if (write_pending_ || out_.empty() || link_.state() != RedisLink::State::kReady) return;
  writing_.swap(out_);
  out_.clear();
  write_pending_ = true;
  link_.Write(writing_, [this, self = shared_from_this()] {
    write_pending_ = false;
    Flush();
  });
}

void CommandClient::OnData() {
  const uint64_t gen = link_.generation();
  for (;;) {
    Result<ReplyPtr> next = link_.NextReply();
    if (!next.ok()) return link_.Drop(next.status().message());
    if (*next == nullptr) return;
    if (message_ && IsMessage(**next)) {
      message_(**next);
    } else if (waiting_.empty()) {
      return link_.Drop("unexpected reply from " + link_.Where());
    } else {
      ReplyHandler done = std::move(waiting_.front());
      waiting_.pop_front();
      ArmTimer();
      done(std::move(next).value());
    }
    if (gen != link_.generation()) return;
  }
}

void CommandClient::OnLost(const std::string& reason) {
  timer_.cancel();
  std::deque<ReplyHandler> waiting = std::move(waiting_);
  waiting_.clear();
  for (ReplyHandler& done : waiting) done(Status::Unavailable(reason));
  if (auto lost = std::exchange(lost_, nullptr)) lost(reason);
  message_ = nullptr;
}

// Restarted by each answer: the oldest command waiting gets `timeout_` from the last sign of
// life.
void CommandClient::ArmTimer() {
  if (waiting_.empty()) {
    timer_.cancel();
    return;
  }
  timer_.expires_after(timeout_);
  timer_.async_wait([this, self = shared_from_this(),
                     gen = link_.generation()](const boost::system::error_code& ec) {
    if (ec || gen != link_.generation() || waiting_.empty()) return;
    link_.Drop("no answer from " + link_.Where() + " in " + std::to_string(timeout_.count()) +
               " ms");
  });
}

void SendAll(CommandClient& client, const std::vector<std::vector<std::string>>& commands,
             std::function<void(std::vector<Result<ReplyPtr>>)> done) {
  struct CommandJoin {
    std::vector<Result<ReplyPtr>> replies;
    size_t left = 0;
    std::function<void(std::vector<Result<ReplyPtr>>)> done;
  };
  auto join = std::make_shared<CommandJoin>();
  join->replies.reserve(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    join->replies.emplace_back(Status::Unavailable("not sent"));
  }
  join->left = commands.size();
  join->done = std::move(done);
  if (commands.empty()) return join->done({});
  for (size_t i = 0; i < commands.size(); ++i) {
    client.Send(commands[i], [join, i](Result<ReplyPtr> reply) {
      join->replies[i] = std::move(reply);
      if (--join->left == 0) join->done(std::move(join->replies));
    });
  }
}

}  // namespace sluice::redis
