// Finding the master through Redis Sentinel, as the Sentinel client guidelines ask: the
// sentinels in turn, the one that answers moved to the front; a master confirmed with ROLE;
// +switch-master heard as a hint; the list of sentinels refreshed from their own.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "command_client.h"
#include "locator.h"
#include "sluice/redis_credentials.h"
#include "sluice/redis_options.h"

namespace sluice::redis {

// Runs on one io_context's thread, the connection's that asks it.
class SentinelLocator final : public Locator, public std::enable_shared_from_this<SentinelLocator> {
 public:
  // `options.sentinel` names the sentinels and the master; `options.tls`, when set, is used to
  // the sentinels as to the master.
  SentinelLocator(boost::asio::io_context& io, const RedisOptions& options,
                  std::shared_ptr<RedisCredentials> credentials);

  // SENTINEL get-master-addr-by-name, asking each sentinel in turn (each within a short
  // timeout) until one names the master; that one goes to the front of the list, and the
  // sentinels it knows join the list. Fails when none answers.
  void Locate(Done done) override;

  bool ConfirmsMaster() const override { return true; }

  // Subscribes to +switch-master on a sentinel (another one when that connection ends) and
  // calls `moved` with the new address of this master; and, each time a subscription is
  // confirmed, with the address that sentinel names, so that a switch missed meanwhile is
  // caught up with.
  void Watch(const std::function<void(const NodeAddress&)>& moved) override;

  void Stop() override;

 private:
  // Asks the sentinel at `next` in `order`, and the next one when it cannot say.
  void Ask(std::shared_ptr<const std::vector<HostPort>> order, size_t next, Done done,
           std::string errors);
  void OnAnswer(std::shared_ptr<const std::vector<HostPort>> order, size_t index,
                std::vector<Result<ReplyPtr>> replies, Done done, std::string errors);
  void MoveToFront(const HostPort& sentinel);
  void LearnSentinels(const redisReply& reply);
  void Subscribe();
  void OnSubscribed(const HostPort& sentinel);
  void OnSwitch(const HostPort& sentinel, const redisReply& message);
  void Ping();
  // A sentinel's or the master's address as connections need it.
  NodeAddress AddressOf(const HostPort& node) const;
  // AUTH for the sentinels, when they have a password, then `commands`.
  std::vector<std::vector<std::string>> WithAuth(std::vector<std::vector<std::string>> commands);

  boost::asio::io_context& io_;
  const SentinelOptions options_;
  const std::string server_name_;  // tls.server_name, when TLS is on
  const std::shared_ptr<RedisCredentials> credentials_;
  const std::chrono::milliseconds ask_timeout_;
  std::deque<HostPort> sentinels_;  // the one that answered last first
  std::function<void(const NodeAddress&)> moved_;
  std::shared_ptr<CommandClient> subscription_;
  size_t subscribe_next_ = 0;
  const std::shared_ptr<const Clock> clock_;
  ClockTimer subscribe_timer_;
  ClockTimer ping_timer_;
  bool stopped_ = false;
};

}  // namespace sluice::redis
