#include "memcached_baseline.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <stdexcept>
#include <system_error>

namespace sluice::baselines {
namespace {

// Memcached reads an exptime past 30 days as a time since the epoch, not from now.
constexpr int64_t kMaxRelativeExptimeS = 30LL * 24 * 3600;

// What Memcached did not do, for the benchmark to report.
[[noreturn]] void MemcachedFailed(const std::string& what) { throw std::runtime_error(what); }

int64_t SystemNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

template <typename Number>
std::optional<Number> Parse(std::string_view text) {
  Number value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// A bucket as the value of its key: "tokens ts", the tokens in the shortest text that reads back
// as the same double.
std::string FormatBucket(const BucketState& state) {
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, state.tokens);
  if (error != std::errc()) MemcachedFailed("cannot format a number");
  return std::string(buffer, end) + " " + std::to_string(state.updated_ms);
}

BucketState ParseBucket(std::string_view value) {
  const size_t space = value.find(' ');
  const auto tokens = Parse<double>(value.substr(0, space));
  const auto ts =
      space == std::string_view::npos ? std::nullopt : Parse<int64_t>(value.substr(space + 1));
  if (!tokens || !ts) MemcachedFailed("not a bucket: " + std::string(value));
  return {*tokens, *ts};
}

// A reply that is none of those a command expects: an error, or a broken protocol.
[[noreturn]] void Unexpected(std::string_view command, const std::string& line) {
  MemcachedFailed(std::string(command) + ": " + line);
}

}  // namespace

MemcachedClient::MemcachedClient(const std::string& host, uint16_t port, MemcachedOptions options)
    : options_(std::move(options)) {
  if (!options_.now_ms) options_.now_ms = SystemNowMs;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string where = host + ":" + std::to_string(port);
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) {
    MemcachedFailed("cannot resolve " + where);
  }
  for (addrinfo* a = found; a != nullptr && fd_ < 0; a = a->ai_next) {
    fd_ = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd_ >= 0 && ::connect(fd_, a->ai_addr, a->ai_addrlen) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd_ < 0)
    MemcachedFailed("cannot connect to memcached at " + where + ": " +
                    std::generic_category().message(errno));
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const timeval timeout{5, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
}

MemcachedClient::~MemcachedClient() { ::close(fd_); }

std::string MemcachedClient::RoundTrip(std::string_view request) {
  while (!request.empty()) {
    const ssize_t sent = ::send(fd_, request.data(), request.size(), MSG_NOSIGNAL);
    if (sent <= 0)
      MemcachedFailed(std::string("memcached connection broke: ") +
                      std::generic_category().message(errno));
    request.remove_prefix(static_cast<size_t>(sent));
  }
  ++round_trips_;
  return ReadLine();
}

std::string MemcachedClient::ReadLine() {
  for (size_t scanned = 0;;) {
    const size_t end = buffer_.find("\r\n", scanned > 0 ? scanned - 1 : 0);
    if (end != std::string::npos) {
      std::string line = buffer_.substr(0, end);
      buffer_.erase(0, end + 2);
      return line;
    }
    scanned = buffer_.size();
    char chunk[4096];
    const ssize_t got = ::recv(fd_, chunk, sizeof chunk, 0);
    if (got <= 0)
      MemcachedFailed(std::string("memcached connection broke: ") +
                      std::generic_category().message(errno));
    buffer_.append(chunk, static_cast<size_t>(got));
  }
}

std::string MemcachedClient::ReadBlock(size_t size) {
  while (buffer_.size() < size + 2) {
    char chunk[4096];
    const ssize_t got = ::recv(fd_, chunk, sizeof chunk, 0);
    if (got <= 0)
      MemcachedFailed(std::string("memcached connection broke: ") +
                      std::generic_category().message(errno));
    buffer_.append(chunk, static_cast<size_t>(got));
  }
  if (buffer_.compare(size, 2, "\r\n") != 0) MemcachedFailed("memcached: a value without its CRLF");
  std::string block = buffer_.substr(0, size);
  buffer_.erase(0, size + 2);
  return block;
}

std::optional<MemcachedClient::Item> MemcachedClient::Gets(const std::string& key) {
  const std::string line = RoundTrip("gets " + key + "\r\n");
  if (line == "END") return std::nullopt;
  // VALUE <key> <flags> <bytes> <cas unique>
  const std::string prefix = "VALUE " + key + " ";
  if (!line.starts_with(prefix)) Unexpected("gets", line);
  std::string_view rest = std::string_view(line).substr(prefix.size());
  const size_t flags_end = rest.find(' ');
  const size_t bytes_end = rest.find(' ', flags_end + 1);
  if (flags_end == std::string_view::npos || bytes_end == std::string_view::npos) {
    Unexpected("gets", line);
  }
  const auto bytes = Parse<size_t>(rest.substr(flags_end + 1, bytes_end - flags_end - 1));
  const auto cas = Parse<uint64_t>(rest.substr(bytes_end + 1));
  if (!bytes || !cas) Unexpected("gets", line);
  Item item{ReadBlock(*bytes), *cas};
  if (const std::string end = ReadLine(); end != "END") Unexpected("gets", end);
  return item;
}

int64_t MemcachedClient::Exptime(int64_t ms) const {
  const int64_t seconds = std::max(options_.min_expiry_s, (ms + 999) / 1000);
  if (seconds <= kMaxRelativeExptimeS) return seconds;
  return options_.now_ms() / 1000 + seconds;
}

bool MemcachedClient::Store(const std::string& key, const std::string& value, int64_t expiry_ms,
                            std::optional<uint64_t> cas) {
  std::string request = (cas ? "cas " : "add ") + key + " 0 " + std::to_string(Exptime(expiry_ms)) +
                        " " + std::to_string(value.size());
  if (cas) request += " " + std::to_string(*cas);
  request += "\r\n" + value + "\r\n";
  const std::string line = RoundTrip(request);
  if (line == "STORED") return true;
  if (line == "EXISTS" || line == "NOT_FOUND" || line == "NOT_STORED") return false;
  Unexpected(cas ? "cas" : "add", line);
}

Outcome MemcachedClient::FixedWindow(const std::string& key, const Limit& limit, int64_t cost) {
  if (cost < 1) MemcachedFailed("incr counts a cost of at least 1");
  round_trips_ = 0;
  Outcome out;
  const int64_t now = options_.now_ms();
  const int64_t to_end = limit.period_ms - now % limit.period_ms;
  const std::string window_key = key + ":" + std::to_string(now / limit.period_ms);
  const std::string incr = "incr " + window_key + " " + std::to_string(cost) + "\r\n";
  std::optional<int64_t> count;
  // incr, else add; when another client added first, its counter is there for the next incr.
  for (int attempt = 0; !count; ++attempt) {
    if (attempt == 3) MemcachedFailed("incr: the window's counter neither counts nor can be added");
    const std::string line = RoundTrip(incr);
    if (line != "NOT_FOUND") {
      count = Parse<int64_t>(line);
      if (!count) Unexpected("incr", line);
    } else if (Store(window_key, std::to_string(cost), to_end, std::nullopt)) {
      count = cost;
    } else {
      ++out.retries;
    }
  }
  const bool allowed = *count <= limit.capacity;
  out.reply = {.allowed = allowed,
               .remaining = std::max<int64_t>(0, limit.capacity - *count),
               .retry_ms = allowed ? 0 : to_end,
               .reset_ms = to_end};
  out.round_trips = round_trips_;
  return out;
}

Outcome MemcachedClient::TokenBucket(const std::string& key, const Limit& limit, int64_t cost) {
  round_trips_ = 0;
  Outcome out;
  for (;;) {
    const int64_t now = options_.now_ms();
    const std::optional<Item> item = Gets(key);
    const std::optional<BucketState> state =
        item ? std::optional(ParseBucket(item->value)) : std::nullopt;
    const TakeOutcome taken = TakeTokens(state, limit, cost, now);
    const std::optional<uint64_t> cas = item ? std::optional(item->cas) : std::nullopt;
    if (Store(key, FormatBucket(taken.state), taken.ttl_ms, cas)) {
      out.reply = taken.reply;
      break;
    }
    if (++out.retries > options_.max_cas_retries) {
      out.aborted = true;
      break;
    }
  }
  out.round_trips = round_trips_;
  return out;
}

}  // namespace sluice::baselines
