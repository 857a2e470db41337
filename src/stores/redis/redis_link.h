// One connection to a Redis server, kept up: find the server, connect over a transport within a
// timeout, read replies, and after a loss connect again with jittered exponential backoff.
#pragma once

#include <array>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>

#include "common/clock_timer.h"
#include "locator.h"
#include "reply.h"
#include "reply_reader.h"
#include "sluice/redis_credentials.h"
#include "transport.h"

namespace sluice::redis {

struct LinkOptions {
  // From the locator's answer to Ready (the transport's handshake and the owner's included).
  std::chrono::milliseconds connect_timeout{1000};
  // After a loss, the wait before connecting again: from the minimum, doubling up to the
  // maximum, jittered; reset by Ready.
  std::chrono::milliseconds reconnect_min{50};
  std::chrono::milliseconds reconnect_max{2000};
  bool reconnect = true;               // false: a loss stops the link for good
  std::shared_ptr<const Clock> clock;  // of the timeouts and waits; null: the process's steady one
};

// Everything runs on one io_context's thread: the link's state needs no lock. The listener is
// told of each step and writes the Redis handshake itself, so that its replies come in order
// with the rest.
class RedisLink {
 public:
  class Listener {
   public:
    // The transport is up: write the handshake, then call Ready once it is answered.
    virtual void OnConnected() = 0;
    // Bytes arrived: take the complete replies with NextReply. The listener may Drop the link
    // meanwhile; no more replies of that connection come.
    virtual void OnData() = 0;
    // The connection is gone, for `reason`: fail what it carried. (When the link reconnects it
    // is after a backoff, with OnConnected again.)
    virtual void OnLost(const std::string& reason) = 0;

   protected:
    ~Listener() = default;
  };

  enum class State { kConnecting, kReady, kBackoff, kStopped };

  // `credentials` null: every attempt fails with `setup_error` (credentials that could not be
  // read), after the usual backoff.
  RedisLink(boost::asio::io_context& io, LinkOptions options, std::shared_ptr<Locator> locator,
            std::shared_ptr<RedisCredentials> credentials, Listener& listener,
            std::string setup_error = "");

  RedisLink(const RedisLink&) = delete;
  RedisLink& operator=(const RedisLink&) = delete;

  // Begins connecting. Every handler holds `owner`, which holds the link, so that both live
  // until the last operation has finished.
  void Start(const std::shared_ptr<void>& owner);

  // The handshake is answered: the connection is ready, the backoff starts again from the least.
  void Ready();

  // Writes `data` (kept valid by the caller until `written` runs; a lost connection never runs
  // it). One write at a time.
  void Write(const std::string& data, std::function<void()> written);

  // The next complete reply read so far; null when none is complete; an error when the bytes
  // are not RESP (the caller then drops the link). Bytes that declare more than a reply may
  // (RespLimits) drop the link as they arrive.
  Result<ReplyPtr> NextReply();

  // Closes the connection, tells the listener why, and connects again after a backoff.
  void Drop(std::string reason);

  // Closes for good; the listener is not told.
  void Stop();

  // Whether the link is asking its locator where to go and has no answer yet.
  bool Locating() const { return state_ == State::kConnecting && transport_ == nullptr; }
  // While locating, asks the locator again and ignores the answer on its way: news that the
  // server moved came after the asking began, so that answer may be out of date.
  void LocateAgain();

  State state() const { return state_; }
  // Why the last connection ended or the last attempt failed.
  const std::string& last_error() const { return last_error_; }
  // The server connected to now, or last asked for.
  const NodeAddress& address() const { return address_; }
  std::string Where() const { return address_.ToString(); }
  // Bumped at every loss: a handler that saw another value belongs to an earlier connection.
  uint64_t generation() const { return generation_; }
  // When bytes last arrived.
  Clock::TimePoint last_read() const { return last_read_; }
  // The clock the link's timeouts and waits are measured on.
  const Clock& clock() const { return connect_timer_.clock(); }

 private:
  void Connect();
  void OnLocated(Result<NodeAddress> where);
  void ReadMore();
  std::chrono::milliseconds NextBackoff();
  // Whether a handler of connection `gen` is stale.
  bool Stale(uint64_t gen) const { return gen != generation_ || state_ == State::kStopped; }

  boost::asio::io_context& io_;
  const LinkOptions options_;
  std::shared_ptr<Locator> locator_;
  std::shared_ptr<RedisCredentials> credentials_;
  Listener& listener_;
  const std::string setup_error_;
  std::weak_ptr<void> owner_;

  State state_ = State::kConnecting;
  uint64_t generation_ = 0;
  std::string last_error_;
  NodeAddress address_;
  std::shared_ptr<Transport> transport_;
  std::unique_ptr<ReplyReader> reader_;  // one a connection
  std::array<char, 64UL * 1024> read_buffer_{};
  ClockTimer connect_timer_;
  ClockTimer reconnect_timer_;
  int backoff_attempt_ = 0;
  Clock::TimePoint last_read_ = connect_timer_.clock().Now();
  std::mt19937_64 rng_;
};

}  // namespace sluice::redis
