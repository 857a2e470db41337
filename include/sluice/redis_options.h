// Where a Redis server is and how to reach it: TCP, TLS or a Unix socket, one server or a master
// found through Redis Sentinel, with the credentials to present.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/clock.h"
#include "sluice/status.h"

namespace sluice {

// How the token bucket runs on the server.
enum class ScriptMode {
  kEvalsha,   // SCRIPT LOAD once, then EVALSHA by digest; NOSCRIPT reloads and resends
  kFunction,  // Redis 7 functions: FUNCTION LOAD of the "sluice" library, then FCALL
};

// How a token bucket is kept in Redis. Either layout reads a bucket the other left, and
// replaces it, so switching keeps every count.
enum class BucketLayout {
  kHash,     // a hash of tokens and ts, as docs/design.md's script keeps it: shared with any
             // gateway that runs that script
  kCompact,  // one 16-byte string set with its expiry in one command: less memory, and one
             // command a bucket fewer for Redis to run
};

// TLS to Redis. The server's certificate and name are verified unless `verify` is false.
struct TlsOptions {
  std::string ca_file;    // PEM; empty: the system's trust store
  std::string cert_file;  // a client certificate (PEM), for servers that ask for one
  std::string key_file;   // its private key (PEM)
  // The name sent as SNI and verified in the server's certificate. Empty: the host connected
  // to, for a configured address; for a discovered one (a cluster node, a master named by a
  // sentinel), its announced hostname when it has one, else its address.
  std::string server_name;
  bool verify = true;

  bool operator==(const TlsOptions&) const = default;
};

// A host and port: "10.0.0.1:26379", "[::1]:26379".
using HostPort = std::pair<std::string, uint16_t>;

// Parses "host:port" ("[::1]:7001" for IPv6). The message never repeats the text.
Result<HostPort> ParseHostPort(std::string_view address);

// Redis Sentinel: the master is whatever the sentinels say it is, asked anew at every connect.
struct SentinelOptions {
  std::vector<HostPort> sentinels;
  std::string master;  // the name the sentinels monitor it by
  // The sentinels' own credentials, when they have some.
  std::string username;
  std::string password;
  std::string password_file;

  bool operator==(const SentinelOptions&) const = default;
};

// Where the server is and how to talk to it.
struct RedisOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 6379;
  std::string unix_path;          // set: a Unix socket, and host and port are unused
  std::optional<TlsOptions> tls;  // set: TLS (rediss://); to the sentinels too
  // Set: the master is found by asking these sentinels, and host and port are unused.
  std::optional<SentinelOptions> sentinel;
  std::string username;       // an ACL user; empty for the default user
  std::string password;       // empty for no AUTH
  std::string password_file;  // set: the password is this file's content (read by
                              // RedisCredentials), one trailing newline dropped
  int db = 0;                 // SELECTed after connecting
  ScriptMode mode = ScriptMode::kEvalsha;
  BucketLayout layout = BucketLayout::kHash;
  // To connect, handshakes (TLS, AUTH, the script load) included.
  std::chrono::milliseconds connect_timeout{1000};
  // A check not answered within this time fails with kDeadlineExceeded.
  std::chrono::milliseconds timeout{50};
  // Most bucket operations sent and not yet answered; beyond it, checks fail at once with
  // kResourceExhausted instead of queueing behind a slow server.
  size_t max_in_flight = 16384;
  // Reconnection waits start here and double up to the maximum, with jitter.
  std::chrono::milliseconds reconnect_min{50};
  std::chrono::milliseconds reconnect_max{2000};
  // What the timeouts, deadlines and reconnection waits are measured on; null: the process's
  // steady clock. Tests give one they move.
  std::shared_ptr<const Clock> clock;

  // Where it connects, for people and logs: "redis.internal:6380", "unix:/run/redis.sock",
  // "sentinel master mymaster"; never a credential.
  std::string Describe() const;

  bool operator==(const RedisOptions&) const = default;
};

// Parses a store URL:
//   redis://[[user]:password@]host[:port][/db]     plaintext TCP
//   rediss://[[user]:password@]host[:port][/db]    TLS (port 6379 by default too)
//   unix:///path/to/redis.sock[?db=N]               a Unix socket
//   sentinel://[[user]:password@]host:port[,host:port...]/MASTER[?db=N]
// User and password may be percent-encoded; in a sentinel URL they are the master's. Messages
// say what is wrong without repeating the URL, which may hold a password.
Result<RedisOptions> ParseRedisUrl(std::string_view url);

}  // namespace sluice
