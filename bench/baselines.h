// The alternatives to the token bucket script that the design (docs/design.md) sets aside, built
// only to be measured against it (bench/baselines_bench) and to show what goes wrong
// (tests/stores/baselines_test.cc). None is offered as a mode of the limiter.
//
// The methods on Redis are here; the other stores of docs/design.md, PostgreSQL and Memcached, are
// in postgres_baseline.h and memcached_baseline.h. A Redis client holds one blocking hiredis
// connection and checks one token bucket in one of four ways. All four keep the script's state (a
// hash of `tokens` and `ts`), take the time from the server's TIME, and decide with
// sluice::TakeTokens, the script's arithmetic, so they differ only in how the read, the decision
// and the write reach Redis:
//
//   kSeparate  TIME; HMGET; decide here; HSET+PEXPIRE (pipelined). Nothing stops two clients
//              from reading the same tokens and spending them twice.
//   kWatch     WATCH; TIME; HMGET; decide; MULTI/HSET/PEXPIRE/EXEC (pipelined). EXEC comes back
//              nil when another client wrote the bucket since the WATCH; then start again, up to
//              a cap, after which the check is given up (an abort, counted; not admitted).
//   kLock      SET lock:<key> <token> NX PX 100, again with backoff while another holds it; TIME;
//              HMGET; decide; HSET+PEXPIRE (pipelined); release with a compare-and-delete script.
//   kScript    EVALSHA of the repository's own token bucket script: one round trip, atomic.
//
// and, for the fixed window that Memcached can keep, kScriptFixedWindow: EVALSHA of the
// repository's fixed window script.
//
// Every command sent, or group of commands pipelined in one write, counts as one round trip.
#pragma once

#include <hiredis/hiredis.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/rule.h"
#include "sluice/token_bucket.h"
#include "stores/redis/reply.h"

namespace sluice::baselines {

enum class Method {
  kSeparate,
  kWatch,
  kLock,
  kScript,
  kScriptFixedWindow,
  kPostgresSync,        // postgres_baseline.h, synchronous_commit on
  kPostgresAsync,       // the same, synchronous_commit off
  kPostgresQuotaStore,  // Sluice's quota store (method_client.h): durable fixed windows, group
                        // commit
  kMemcachedIncr,       // memcached_baseline.h: a fixed window by incr
  kMemcachedCas,        // a token bucket by a gets/cas loop
};

inline constexpr Method kAllMethods[] = {Method::kSeparate,
                                         Method::kWatch,
                                         Method::kLock,
                                         Method::kScript,
                                         Method::kScriptFixedWindow,
                                         Method::kPostgresSync,
                                         Method::kPostgresAsync,
                                         Method::kPostgresQuotaStore,
                                         Method::kMemcachedIncr,
                                         Method::kMemcachedCas};

// "separate", "watch", "lock", "script", "script-fixed-window", "postgres-sync",
// "postgres-async", "postgres-quota-store", "memcached-incr", "memcached-cas".
std::string_view MethodName(Method method);
std::optional<Method> ParseMethod(std::string_view name);

// The server a method needs.
enum class Server { kRedis, kPostgres, kMemcached };
Server ServerOf(Method method);

// Whether a method counts in fixed windows (`capacity` per `period_ms`) instead of a token bucket.
bool IsFixedWindow(Method method);

struct Options {
  // Pipeline every command that does not wait on an earlier reply: TIME with the read (and the
  // WATCH), the lock's release with the write. Off: one step a round trip, as the design
  // (docs/design.md) counts them.
  bool fewest_round_trips = false;
  // WATCH: transactions that may come back nil before the check is given up.
  int max_watch_retries = 100;
  // The lock's expiry, in ms. It must outlast the read, decision and write it protects: a holder
  // stalled longer than this loses the lock to the next client, and both write.
  int64_t lock_ttl_ms = 100;
  // Lock: attempts to take it before the check is given up; between attempts the client sleeps,
  // from lock_backoff_min_us doubling up to lock_backoff_max_us, with jitter.
  int max_lock_attempts = 2000;
  int64_t lock_backoff_min_us = 20;
  int64_t lock_backoff_max_us = 1000;
  // Called after the read and the decision, before the write (kSeparate, kWatch and kLock), with
  // the attempt number (0 for the first). Tests use it to make two clients read before either
  // writes; a benchmark leaves it empty.
  std::function<void(int attempt)> before_write;
};

// What one check did.
struct Outcome {
  // The store's answer, as the scripts give it: allowed, whole tokens left (a fixed window: what
  // is left of its allowance), retry_ms, and ms until full (until the window ends).
  BucketReply reply;
  int round_trips = 0;
  // kWatch: EXECs that came back nil. kLock: attempts that found the lock taken. kScript:
  // NOSCRIPT answers (the script reloaded). kMemcachedCas: writes that found the bucket changed
  // since its read (or taken, when there was none). kMemcachedIncr: adds that found the window's
  // counter already there. kSeparate and PostgreSQL: always 0.
  int retries = 0;
  // Given up after the cap on retries (kWatch, kMemcachedCas) or lock attempts (kLock); never
  // allowed.
  bool aborted = false;
  // kLock: the release found the lock gone or someone else's (it expired while held).
  bool lost_lock = false;
};

// One client: one connection to one Redis server. Not thread-safe; one per thread.
class Client {
 public:
  // Connects to host:port (throws std::runtime_error if it cannot) and loads the token bucket
  // script.
  Client(const std::string& host, uint16_t port, Options options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Takes `cost` tokens from the bucket at `key` if they are there, in the way `method` (one on
  // Redis) says. Throws std::runtime_error on a broken connection or an error reply.
  Outcome Check(Method method, const std::string& key, const Limit& limit, int64_t cost = 1);

  Outcome Separate(const std::string& key, const Limit& limit, int64_t cost = 1);
  Outcome Watch(const std::string& key, const Limit& limit, int64_t cost = 1);
  Outcome Lock(const std::string& key, const Limit& limit, int64_t cost = 1);
  // The repository's script of `algorithm` (the token bucket's or the fixed window's).
  Outcome Script(const std::string& key, const Limit& limit, int64_t cost = 1,
                 Algorithm algorithm = Algorithm::kTokenBucket);

 private:
  using Reply = redis::ReplyPtr;

  // Sends `commands` in one write and reads their replies: one round trip.
  std::vector<Reply> RoundTrip(const std::vector<std::vector<std::string>>& commands);
  Reply Command(const std::vector<std::string>& args);
  // TIME and HMGET of the bucket (after `first`, when given, such as a WATCH): the server's
  // clock in ms and the bucket as stored, nullopt when there is none.
  struct Read {
    int64_t now_ms = 0;
    std::optional<BucketState> state;
  };
  Read ReadBucket(const std::string& key, const std::vector<std::string>& first = {});
  // HSET of tokens and ts, then PEXPIRE, as the script writes them.
  static std::vector<std::vector<std::string>> WriteBucket(const std::string& key,
                                                           const TakeOutcome& taken);
  // SCRIPT LOAD of the script of `algorithm`; keeps its SHA1.
  void LoadScript(Algorithm algorithm);
  void BeforeWrite(int attempt) const;

  Options options_;
  redisContext* context_ = nullptr;
  // SHA1 of each script loaded, by algorithm.
  std::map<Algorithm, std::string> script_shas_;
  std::string lock_owner_;  // this client's part of every lock token
  uint64_t lock_serial_ = 0;
  uint64_t rng_state_;   // backoff jitter
  int round_trips_ = 0;  // of the check in progress
};

}  // namespace sluice::baselines
