// Buckets in a Redis server, shared by every gateway that points at it.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/redis_credentials.h"
#include "sluice/redis_options.h"
#include "sluice/store.h"

namespace sluice {

namespace redis {
class CallPipeline;
}
struct RedisCall;

// Counters of a RedisStore's connection, for metrics and tests.
struct RedisStoreStats {
  uint64_t connects = 0;      // successful connections, the first included
  uint64_t script_loads = 0;  // SCRIPT LOAD / FUNCTION LOAD sent after NOSCRIPT or on connect
  uint64_t commands = 0;      // bucket commands written
  uint64_t writes = 0;        // socket writes that carried them (auto-pipelining: fewer)
  uint64_t timeouts = 0;      // checks failed with kDeadlineExceeded
  uint64_t short_waits = 0;   // WAITs that ended before the replicas asked for had the write
};

// A Store on one Redis server (over TCP, TLS or a Unix socket; or the master that Redis Sentinel
// names), over one auto-pipelined connection, run by a thread of its own or by the caller's event
// loop.
// All operations of one Apply go in one script call (one EVALSHA or FCALL with a key per
// bucket), answered in one round trip; concurrent checks share script calls and socket writes. The
// connection handshakes (AUTH, SELECT, script or function load), reconnects with backoff when it
// drops, and reloads the script when the server has lost it, invisibly to callers. While
// disconnected, checks fail at once with kUnavailable; while connecting, they wait up to the check
// timeout. With Sentinel, every connection asks the sentinels where the master is and confirms
// it with ROLE; a connection the master's failover cuts off fails the calls it carried (never
// resent: they may have been applied) and the next one goes to the new master.
class RedisStore final : public Store {
 public:
  // Starts the connection's thread and begins connecting. The credentials are read from the
  // files `options` names; when they cannot be, the store never connects and every check fails
  // with kUnavailable and the reason.
  explicit RedisStore(RedisOptions options);
  // Runs the connection on `io`, which one thread runs (an event loop of the caller's); checks
  // submitted on that thread then never change threads, and complete there. `io` must outlive
  // the store's pending work or be destroyed with it undone.
  RedisStore(RedisOptions options, boost::asio::io_context& io);
  // With credentials read by the caller (and shared by its stores, so that one Reload rotates
  // them all); on `io` when it is given, as above, else on a thread of its own.
  RedisStore(RedisOptions options, std::shared_ptr<RedisCredentials> credentials,
             boost::asio::io_context* io);
  // Checks still pending complete with kUnavailable (on an external io_context, when it next
  // runs; if it never runs again, they are dropped with it, uncompleted); the own thread, if
  // any, is joined. On that thread itself (a callback dropped the last reference) the thread
  // ends alone, and is joined later or, at the latest, as the process exits, which stops and
  // joins every store's own thread still running first.
  ~RedisStore() override;

  RedisStore(const RedisStore&) = delete;
  RedisStore& operator=(const RedisStore&) = delete;

  // All of `ops` of one algorithm in one script call (so their keys must share a slot on a
  // cluster node); ops of each algorithm in a call of their own, in the same write. Calls that
  // arrive together (of one algorithm; up to 64 ops) are one script call, each still atomic and
  // decided in turn, so that Redis's cost per call is paid once for them all; when a migrating
  // slot answers such a call with ASK or TRYAGAIN, each check is sent again alone, so that the
  // answer it gets is about its own keys. When an op asks for a replica wait, the write that
  // carries the call ends with one WAIT (for the most replicas and the longest timeout its calls
  // ask), and `done` runs after its answer. WAIT holds the connection while it waits: keep its
  // timeout well under the store's.
  void Apply(std::vector<BucketOp> ops, StoreCallback done) override;
  // One script call that charges only if every enforced op allows; ops of different algorithms
  // (different scripts) get kFailedPrecondition.
  void ApplyAllOrNothing(std::vector<BucketOp> ops, StoreCallback done) override;

  // True while the connection is up and ready for checks.
  bool Ready() const;

  // Waits until Ready() or `timeout` passes; returns whether it became ready.
  bool WaitReady(std::chrono::milliseconds timeout) const;

  RedisStoreStats Stats() const;

  // The server ("host:port", "unix:PATH" or "sentinel:MASTER"), whether the connection is up, and
  // its round trips.
  std::vector<StoreNodeStatus> Nodes() const override;

  // Why the last connection ended or the last attempt failed ("127.0.0.1:6380: TLS: the
  // server's certificate is refused: certificate has expired"); empty until one has. For logs
  // and operators, never for clients: it names the server.
  std::string LastError() const;

 private:
  // The cluster store's way in (src/stores/redis/redis_call.h).
  friend void ApplyCall(RedisStore& store, std::vector<BucketOp> ops, const RedisCall& call,
                        StoreCallback done);
  void Apply(std::vector<BucketOp> ops, const RedisCall& call, StoreCallback done);

  std::string node_;  // as Nodes() names it
  std::shared_ptr<redis::CallPipeline> pipeline_;
};

// The Lua source of `algorithm`'s script, as embedded at build time; for the token bucket, the
// one that keeps buckets in `layout` (the other algorithms have one layout).
std::string_view BucketScript(Algorithm algorithm, BucketLayout layout = BucketLayout::kHash);

// The Redis 7 function library ("sluice") that registers the scripts as functions,
// sluice_token_bucket, sluice_token_bucket_compact, sluice_gcra and sluice_fixed_window.
std::string FunctionLibrary();

}  // namespace sluice
