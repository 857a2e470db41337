#include "redis_link.h"

#include <boost/asio/error.hpp>

namespace sluice::redis {

namespace asio = boost::asio;

RedisLink::RedisLink(asio::io_context& io, LinkOptions options, std::shared_ptr<Locator> locator,
                     std::shared_ptr<RedisCredentials> credentials, Listener& listener,
                     std::string setup_error)
    : io_(io),
      options_(options),
      locator_(std::move(locator)),
      credentials_(std::move(credentials)),
      listener_(listener),
      setup_error_(std::move(setup_error)),
      connect_timer_(io, options_.clock),
      reconnect_timer_(io, options_.clock),
      rng_(std::random_device{}()) {}

void RedisLink::Start(const std::shared_ptr<void>& owner) {
  owner_ = owner;
  Connect();
}

// Asks where the server is (a sentinel locator bounds its own asking), then connects within
// the connect timeout.
void RedisLink::Connect() {
  state_ = State::kConnecting;
  if (!credentials_) return Drop(setup_error_);
  locator_->Locate([this, keep = owner_.lock(), gen = generation_](Result<NodeAddress> where) {
    if (Stale(gen) || state_ != State::kConnecting) return;
    OnLocated(std::move(where));
  });
}

void RedisLink::OnLocated(Result<NodeAddress> where) {
  if (!where.ok()) return Drop(where.status().message());
  address_ = std::move(where).value();
  connect_timer_.expires_after(options_.connect_timeout);
  connect_timer_.async_wait(
      [this, keep = owner_.lock(), gen = generation_](const boost::system::error_code& ec) {
        if (ec || Stale(gen) || state_ != State::kConnecting) return;
        Drop("timed out connecting to " + Where() + " (" +
             std::to_string(options_.connect_timeout.count()) + " ms)");
      });
  transport_ = MakeTransport(io_, address_, credentials_->Tls());
  transport_->Connect([this, keep = owner_.lock(), gen = generation_](const std::string& error) {
    if (Stale(gen) || state_ != State::kConnecting) return;
    if (!error.empty()) return Drop(Where() + ": " + error);
    reader_ = std::make_unique<ReplyReader>();
    last_read_ = clock().Now();
    ReadMore();
    listener_.OnConnected();
  });
}

void RedisLink::Ready() {
  if (state_ != State::kConnecting) return;
  connect_timer_.cancel();
  state_ = State::kReady;
  backoff_attempt_ = 0;
}

void RedisLink::Write(const std::string& data, std::function<void()> written) {
  transport_->Write(asio::buffer(data),
                    [this, keep = owner_.lock(), gen = generation_, written = std::move(written)](
                        const boost::system::error_code& ec, size_t) {
                      if (Stale(gen)) return;
                      if (ec) return Drop("writing to " + Where() + ": " + ec.message());
                      written();
                    });
}

void RedisLink::ReadMore() {
  transport_->ReadSome(
      asio::buffer(read_buffer_), [this, keep = owner_.lock(), gen = generation_](
                                      const boost::system::error_code& ec, size_t n) {
        if (Stale(gen)) return;
        if (ec) {
          return Drop(ec == asio::error::eof ? Where() + " closed the connection"
                                             : "reading from " + Where() + ": " + ec.message());
        }
        last_read_ = clock().Now();
        if (Status s = reader_->Feed(read_buffer_.data(), n); !s.ok()) {
          return Drop("malformed reply from " + Where() + ": " + s.message());
        }
        listener_.OnData();
        if (!Stale(gen)) ReadMore();
      });
}

Result<ReplyPtr> RedisLink::NextReply() {
  if (reader_ == nullptr) return Status::StoreError("malformed reply from " + Where());
  Result<ReplyPtr> next = reader_->Next();
  if (!next.ok())
    return Status::StoreError("malformed reply from " + Where() + ": " + next.status().message());
  return next;
}

void RedisLink::Drop(std::string reason) {
  if (state_ == State::kStopped) return;
  ++generation_;
  last_error_ = std::move(reason);
  if (transport_) transport_->Close();
  transport_.reset();
  connect_timer_.cancel();
  state_ = options_.reconnect ? State::kBackoff : State::kStopped;
  listener_.OnLost(last_error_);
  if (!options_.reconnect || state_ != State::kBackoff) return;
  reconnect_timer_.expires_after(NextBackoff());
  reconnect_timer_.async_wait(
      [this, keep = owner_.lock(), gen = generation_](const boost::system::error_code& ec) {
        if (!ec && !Stale(gen) && state_ == State::kBackoff) Connect();
      });
}

void RedisLink::LocateAgain() {
  if (!Locating()) return;
  ++generation_;  // the locator's answer to the earlier asking is stale
  Connect();
}

void RedisLink::Stop() {
  if (state_ == State::kStopped) return;
  ++generation_;
  state_ = State::kStopped;
  if (transport_) transport_->Close();
  transport_.reset();
  connect_timer_.cancel();
  reconnect_timer_.cancel();
  locator_->Stop();
}

std::chrono::milliseconds RedisLink::NextBackoff() {
  auto delay = options_.reconnect_min * (1LL << std::min(backoff_attempt_++, 16));
  delay = std::min<std::chrono::milliseconds>(delay, options_.reconnect_max);
  // Jitter, so that gateways that lost the same server do not return in lockstep.
  std::uniform_int_distribution<int64_t> half(delay.count() / 2, delay.count());
  return std::chrono::milliseconds(half(rng_));
}

}  // namespace sluice::redis
