#include "fault_proxy.h"

#include <sys/socket.h>

#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <deque>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "redis_server.h"

namespace sluice::testing {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

std::string_view FaultName(Fault fault) {
  switch (fault) {
    case Fault::kNone:
      return "none";
    case Fault::kLatency:
      return "latency";
    case Fault::kStall:
      return "stall";
    case Fault::kReset:
      return "reset";
    case Fault::kHalfClose:
      return "half_close";
    case Fault::kByteByByte:
      return "byte_by_byte";
    case Fault::kCutReply:
      return "cut_reply";
    case Fault::kRefuse:
      return "refuse";
  }
  return "unknown";
}

namespace {

// The fault in force, read by every relay on the proxy's thread.
struct FaultState {
  Fault fault = Fault::kNone;
  std::chrono::milliseconds delay{0};
  mutable std::atomic<uint64_t> from_clients{0};  // bytes taken from the clients, held or not
};

// Closes `socket` with a reset (RST) rather than a FIN.
void ResetSocket(tcp::socket& socket) {
  if (!socket.is_open()) return;
  error_code ignored;
  socket.set_option(asio::socket_base::linger(true, 0), ignored);
  socket.close(ignored);
}

// One connection through the proxy: the client's socket, the server's, and the bytes on their
// way each way. Both sides are read all the time, whatever the fault: what a fault holds back
// waits here, in order.
class Relay : public std::enable_shared_from_this<Relay> {
 public:
  Relay(asio::io_context& io, tcp::socket client, std::shared_ptr<const FaultState> state)
      : state_(std::move(state)),
        client_(std::move(client)),
        server_(io),
        up_(client_, server_, false, io),
        down_(server_, client_, true, io) {}

  void Start(const tcp::endpoint& target) {
    server_.async_connect(target, [self = shared_from_this()](const error_code& ec) {
      if (self->done_) return;
      if (ec) return self->Reset();  // the server refuses: so does the proxy
      error_code ignored;
      self->client_.set_option(tcp::no_delay(true), ignored);  // a byte at a time means it
      self->server_.set_option(tcp::no_delay(true), ignored);
      self->Read(self->up_);
      self->Read(self->down_);
      self->OnFault();
    });
  }

  // The fault changed (or the connection is new): act on it.
  void OnFault() {
    switch (state_->fault) {
      case Fault::kReset:
        return Reset();
      case Fault::kRefuse:
        return Close();
      case Fault::kHalfClose:
        HalfClose();
        break;
      default:
        break;
    }
    for (Direction* d : {&up_, &down_}) {
      d->timer.cancel();  // a wait for the fault before: its handler pumps again
      Pump(*d);
    }
  }

  // Both sides get a reset.
  void Reset() {
    if (done_) return;
    done_ = true;
    ResetSocket(client_);
    ResetSocket(server_);
    up_.timer.cancel();
    down_.timer.cancel();
  }

 private:
  struct Chunk {
    Clock::time_point arrived;
    std::string bytes;
  };

  // Bytes from one socket to the other.
  struct Direction {
    Direction(tcp::socket& from_socket, tcp::socket& to_socket, bool to_the_client,
              asio::io_context& io)
        : from(from_socket), to(to_socket), to_client(to_the_client), timer(io) {}
    tcp::socket& from;
    tcp::socket& to;
    const bool to_client;
    asio::steady_timer timer;
    std::deque<Chunk> held;
    std::array<char, 16UL * 1024> buffer{};
    bool busy = false;  // a write, or a wait before the next, is under way
    bool eof = false;   // `from` sent its last byte
    bool shut = false;  // `to`'s sending side is shut
  };

  void Read(Direction& d) {
    d.from.async_read_some(asio::buffer(d.buffer),
                           [self = shared_from_this(), &d](const error_code& ec, size_t n) {
                             if (self->done_) return;
                             if (ec == asio::error::eof) {
                               d.eof = true;
                               return self->Pump(d);
                             }
                             if (ec) return self->Reset();  // a peer's reset reaches the other peer
                             if (!d.to_client) self->state_->from_clients += n;
                             if (!(d.to_client && self->half_closed_)) {
                               d.held.push_back({Clock::now(), std::string(d.buffer.data(), n)});
                             }
                             self->Pump(d);
                             self->Read(d);
                           });
  }

  // Sends what `d` holds as far as the fault lets it.
  void Pump(Direction& d) {
    if (done_ || d.busy) return;
    if (d.to_client && half_closed_) d.held.clear();
    if (d.held.empty()) return Drained(d);
    const Fault fault = state_->fault;
    if (fault == Fault::kStall) return;
    const Chunk& chunk = d.held.front();
    if (fault == Fault::kLatency && Clock::now() < chunk.arrived + state_->delay) {
      return Wait(d, chunk.arrived + state_->delay);
    }
    size_t n = chunk.bytes.size();
    const bool trickle = d.to_client && fault == Fault::kByteByByte;
    const bool cut = d.to_client && fault == Fault::kCutReply;
    if (trickle) n = 1;
    if (cut) n /= 2;
    d.busy = true;
    asio::async_write(d.to, asio::buffer(chunk.bytes.data(), n),
                      [self = shared_from_this(), &d, n, trickle, cut](
                          const error_code& ec, size_t) { self->Written(d, ec, n, trickle, cut); });
  }

  // `d` holds nothing: its end passed on once its side has ended, and the proxy closed once both
  // sides have.
  void Drained(Direction& d) {
    if (d.eof && !d.shut) {
      d.shut = true;
      error_code ignored;
      d.to.shutdown(tcp::socket::shutdown_send, ignored);
    }
    if (up_.eof && down_.eof && up_.held.empty() && down_.held.empty()) Close();
  }

  // `n` bytes of `d`'s first chunk are written (or `ec` says why not): the fault's next step.
  void Written(Direction& d, const error_code& ec, size_t n, bool trickle, bool cut) {
    d.busy = false;
    if (done_) return;
    if (d.to_client && half_closed_) return Pump(d);
    if (ec) return Reset();
    Chunk& front = d.held.front();
    front.bytes.erase(0, n);
    if (front.bytes.empty()) d.held.pop_front();
    if (cut) return Close();
    if (trickle) return Wait(d, Clock::now() + state_->delay);
    Pump(d);
  }

  void Wait(Direction& d, Clock::time_point until) {
    d.busy = true;
    d.timer.expires_at(until);
    d.timer.async_wait([self = shared_from_this(), &d](const error_code&) {
      d.busy = false;
      self->Pump(d);
    });
  }

  // The client reads the end of the stream; what it still sends goes on to the server.
  void HalfClose() {
    if (half_closed_) return;
    half_closed_ = true;
    down_.held.clear();
    down_.shut = true;
    error_code ignored;
    client_.shutdown(tcp::socket::shutdown_send, ignored);
  }

  // Both sides get a FIN.
  void Close() {
    if (done_) return;
    done_ = true;
    for (tcp::socket* socket : {&client_, &server_}) {
      error_code ignored;
      socket->shutdown(tcp::socket::shutdown_both, ignored);
      socket->close(ignored);
    }
    up_.timer.cancel();
    down_.timer.cancel();
  }

  const std::shared_ptr<const FaultState> state_;
  tcp::socket client_;
  tcp::socket server_;
  Direction up_;    // client to server
  Direction down_;  // server to client
  bool half_closed_ = false;
  bool done_ = false;
};

}  // namespace

// The listener and the relays, on one io_context and its thread. Handlers hold `this`: the
// thread is joined before anything here is destroyed, and the io_context, destroyed last,
// destroys the relays its unfinished handlers hold.
class FaultProxy::Impl {
 public:
  explicit Impl(uint16_t target_port)
      : target_(asio::ip::make_address("127.0.0.1"), target_port),
        acceptor_(io_),
        state_(std::make_shared<FaultState>()),
        work_(asio::make_work_guard(io_)) {
    // A port asked for by number, not left to the kernel: only then does Linux keep it bound
    // while kRefuse stops the listening (a socket bound to port 0 would lose it).
    for (int attempt = 0;; ++attempt) {
      error_code ec;
      acceptor_.open(tcp::v4());
      acceptor_.set_option(tcp::acceptor::reuse_address(true));
      acceptor_.bind({asio::ip::make_address("127.0.0.1"), FreePort()}, ec);
      if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
      if (!ec) break;
      acceptor_.close();
      if (attempt == 10) throw std::runtime_error("the fault proxy found no port");
    }
    port_ = acceptor_.local_endpoint().port();
    Accept();
    thread_ = std::thread([this] { io_.run(); });
  }

  ~Impl() {
    io_.stop();
    thread_.join();
  }

  uint16_t port() const { return port_; }
  uint64_t accepted() const { return accepted_.load(); }
  uint64_t from_clients() const { return state_->from_clients.load(); }

  void Inject(Fault fault, std::chrono::milliseconds delay) {
    std::promise<void> done;
    error_code listening;
    asio::post(io_, [&] {
      const bool was_refusing = state_->fault == Fault::kRefuse;
      state_->fault = fault;
      state_->delay = delay;
      if (fault == Fault::kRefuse && !was_refusing) {
        error_code ignored;
        acceptor_.cancel(ignored);
        // A listening socket shut for reading stops listening and keeps its port: connects
        // are refused.
        ::shutdown(acceptor_.native_handle(), SHUT_RD);
      } else if (fault != Fault::kRefuse && was_refusing) {
        acceptor_.listen(asio::socket_base::max_listen_connections, listening);
        Accept();
      }
      std::erase_if(relays_, [](const std::weak_ptr<Relay>& r) { return r.expired(); });
      for (const std::weak_ptr<Relay>& weak : relays_) {
        if (auto relay = weak.lock()) relay->OnFault();
      }
      done.set_value();
    });
    done.get_future().wait();
    if (listening) {
      throw std::runtime_error("the fault proxy cannot listen again: " + listening.message());
    }
  }

 private:
  void Accept() {
    acceptor_.async_accept([this](const error_code& ec, tcp::socket client) {
      if (ec) return;  // kRefuse stopped the listening; its end accepts again
      ++accepted_;
      if (state_->fault == Fault::kReset) {
        ResetSocket(client);
      } else {
        auto relay = std::make_shared<Relay>(io_, std::move(client), state_);
        relays_.push_back(relay);
        relay->Start(target_);
      }
      Accept();
    });
  }

  asio::io_context io_;  // first in, last out
  const tcp::endpoint target_;
  tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  const std::shared_ptr<FaultState> state_;
  std::vector<std::weak_ptr<Relay>> relays_;
  std::atomic<uint64_t> accepted_{0};
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
};

FaultProxy::FaultProxy(uint16_t target_port) : impl_(std::make_unique<Impl>(target_port)) {}

FaultProxy::~FaultProxy() = default;

uint16_t FaultProxy::port() const { return impl_->port(); }

void FaultProxy::Inject(Fault fault, std::chrono::milliseconds delay) {
  impl_->Inject(fault, delay);
}

uint64_t FaultProxy::accepted() const { return impl_->accepted(); }

uint64_t FaultProxy::from_clients() const { return impl_->from_clients(); }

}  // namespace sluice::testing
