// The design's (docs/design.md) Memcached: a fixed window by `incr`, and a token bucket by a
// `gets`/`cas` loop. Built only to be measured against the scripts (bench/baselines_bench) and held
// to their answers (tests/stores/baselines_test.cc); never a store of the limiter. One blocking
// connection speaking Memcached's text protocol.
//
// Memcached has no command that reads its clock, so both take the time from the client's clock
// (injected), the gateways' clocks that the script's TIME avoids; and it counts expiries in whole
// seconds.
//
//   FixedWindow  incr <key>:<window> by the cost; NOT_FOUND: add it with the cost, expiring at the
//                window's end, and when another client added it first (NOT_STORED), incr again.
//                Allowed when the count after the incr is within the capacity. Every check is
//                counted, a rejected one too (taking it back would be another round trip), so a
//                rejected check of cost > 1 can turn away a later one that would have fit; with
//                cost 1 the window admits exactly its capacity.
//   TokenBucket  gets <key> (the bucket's `tokens ts` and its CAS unique, or nothing); decide
//                with sluice::TakeTokens, the script's arithmetic; write with cas <unique> (or add,
//                when there was nothing), expiring when the bucket is full again. EXISTS (another
//                client wrote it since the read), NOT_FOUND (it expired) or NOT_STORED (another
//                client added it first): read and decide again, up to a cap, after which the
//                check is given up.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "baselines.h"
#include "sluice/rule.h"
#include "sluice/token_bucket.h"

namespace sluice::baselines {

struct MemcachedOptions {
  // The time in ms since the epoch: the system clock unless a test sets its own.
  std::function<int64_t()> now_ms;
  // TokenBucket: writes that may fail before the check is given up.
  int max_cas_retries = 100;
  // The shortest expiry a key gets, in seconds (Memcached's 0 would be "never"). A test whose
  // clock is not the real one makes it outlast the test, so that no key expires by the real clock.
  int64_t min_expiry_s = 1;
};

// One client: one connection to one memcached. Not thread-safe; one per thread.
class MemcachedClient {
 public:
  // Connects to host:port (throws std::runtime_error if it cannot).
  MemcachedClient(const std::string& host, uint16_t port, MemcachedOptions options = {});
  ~MemcachedClient();
  MemcachedClient(const MemcachedClient&) = delete;
  MemcachedClient& operator=(const MemcachedClient&) = delete;

  // Counts `cost` (>= 1) in the current window of `limit.period_ms` for `key`, allowing at most
  // `limit.capacity` a window. Throws std::runtime_error on a broken connection or an error reply.
  Outcome FixedWindow(const std::string& key, const Limit& limit, int64_t cost = 1);
  // Takes `cost` tokens from the bucket at `key` if they are there. Throws as FixedWindow does.
  Outcome TokenBucket(const std::string& key, const Limit& limit, int64_t cost = 1);

 private:
  // Sends `request` and reads one line of reply (without its CRLF): one round trip.
  std::string RoundTrip(std::string_view request);
  // Reads up to and without the next CRLF.
  std::string ReadLine();
  // Reads exactly `size` bytes and the CRLF after them.
  std::string ReadBlock(size_t size);
  // What gets answered for `key`: the value and its CAS unique, or nullopt when there is none.
  struct Item {
    std::string value;
    uint64_t cas = 0;
  };
  std::optional<Item> Gets(const std::string& key);
  // `add` or (with a CAS unique) `cas` of `value`; true when STORED, false when another client
  // got there first (NOT_STORED, EXISTS, NOT_FOUND).
  bool Store(const std::string& key, const std::string& value, int64_t expiry_ms,
             std::optional<uint64_t> cas);
  // Memcached's exptime for a key that must live `ms` from now: whole seconds, rounded up, at
  // least options_.min_expiry_s; past 30 days Memcached reads it as a time since the epoch.
  int64_t Exptime(int64_t ms) const;

  MemcachedOptions options_;
  int fd_ = -1;
  std::string buffer_;  // bytes read past the last reply taken
  int round_trips_ = 0;
};

}  // namespace sluice::baselines
