// A plain Redis connection for the few commands a store sends besides its checks: asking the
// sentinels where the master is, hearing of their failovers, reading a cluster's slot map.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "redis_link.h"
#include "reply.h"

namespace sluice::redis {

// One connection, made at once. Commands are written as they come (those sent before it is up go
// when it is) and answered in order. A command unanswered within the timeout, or a lost
// connection, fails every command waiting and ends the client: there is no reconnection, the
// caller makes a new client for its next attempt. Everything runs on one io_context's thread.
class CommandClient final : public std::enable_shared_from_this<CommandClient>,
                            private RedisLink::Listener {
 public:
  using ReplyHandler = std::function<void(Result<ReplyPtr>)>;

  // Connects to `address` (with TLS when `credentials` has a context); `timeout`, on `clock`
  // (the process's steady clock when null), bounds the connect and each answer.
  static std::shared_ptr<CommandClient> Connect(boost::asio::io_context& io, NodeAddress address,
                                                std::shared_ptr<RedisCredentials> credentials,
                                                std::chrono::milliseconds timeout,
                                                std::shared_ptr<const Clock> clock = nullptr);

  CommandClient(boost::asio::io_context& io, NodeAddress address,
                std::shared_ptr<RedisCredentials> credentials, std::chrono::milliseconds timeout,
                std::shared_ptr<const Clock> clock);

  // Sends `args`; `done` gets the reply (an error reply is a reply) or why there is none.
  void Send(const std::vector<std::string>& args, ReplyHandler done);

  // Pub/sub: from now on, a "message" reply goes to `message` rather than to a command's
  // handler, and `lost` runs once when the connection ends.
  void Listen(std::function<void(const redisReply&)> message,
              std::function<void(const std::string&)> lost);

  // Ends the connection; what waits fails.
  void Close();

  const NodeAddress& address() const { return link_.address(); }

 private:
  void OnConnected() override;
  void OnData() override;
  void OnLost(const std::string& reason) override;
  void Flush();
  void ArmTimer();

  const std::chrono::milliseconds timeout_;
  RedisLink link_;
  ClockTimer timer_;
  std::string out_;
  std::string writing_;
  bool write_pending_ = false;
  std::deque<ReplyHandler> waiting_;
  std::function<void(const redisReply&)> message_;
  std::function<void(const std::string&)> lost_;
};

// Sends `commands` back to back on `client` and calls `done` once with every reply, in order.
void SendAll(CommandClient& client, const std::vector<std::vector<std::string>>& commands,
             std::function<void(std::vector<Result<ReplyPtr>>)> done);

}  // namespace sluice::redis
