// A rate limit rule: which request attribute it counts by, and how fast its bucket refills.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/request.h"
#include "sluice/status.h"

namespace sluice {

// A token bucket's shape. The rate is two integers, `tokens` added every `period_ms`, so that
// "100 a minute" is exactly 100 / 60000 per millisecond with no rounding in the configuration.
struct Limit {
  int64_t capacity = 0;   // most tokens the bucket holds; a new bucket starts full
  int64_t tokens = 0;     // tokens added per period
  int64_t period_ms = 0;  // the period, in milliseconds

  // Limits on every number, so that the store's arithmetic (IEEE doubles) stays exact.
  static constexpr int64_t kMaxCapacity = 1'000'000'000'000;  // 10^12
  static constexpr int64_t kMaxPeriodMs = 366LL * 24 * 3600 * 1000;

  // Ok when every field is in range: capacity and tokens in [1, kMaxCapacity], period in
  // [1, kMaxPeriodMs] ms.
  Status Validate() const;

  friend bool operator==(const Limit&, const Limit&) = default;
};

// Where a rule's count is kept between requests.
enum class Counting {
  // Every check asks the store: exact across gateways, one round trip a check.
  kShared,
  // Each gateway counts locally and sends its counts every sync interval, in one call, getting
  // back each bucket's tokens, which it enforces from until the next sync. No store call per
  // check, and checks go on while the store is down; between syncs the gateways together can
  // admit up to (gateways x the limit) more than the bucket.
  kSynced,
  // Each gateway leases tokens from the shared bucket (an atomic take of at most what is there)
  // and spends them locally, leasing again when they run out; unused tokens go back when the
  // lease expires and at shutdown. Never admits more than the shared bucket alone would.
  kLeased,
};

// How a rule with Counting::kSynced or kLeased counts locally.
struct LocalCounting {
  Counting mode = Counting::kShared;
  int64_t sync_interval_ms = 1000;  // kSynced: how often counts go to the store
  // kLeased: the largest lease, as a fraction of the capacity, so that one gateway cannot take
  // all of a bucket while the others go without.
  double lease_max_fraction = 0.1;
  int64_t lease_ttl_ms = 1000;  // kLeased: when a lease's unused tokens go back

  bool operator==(const LocalCounting&) const = default;
};

// One rate limit rule. Each distinct value of the rule's attribute (each IP address, each API
// key) has its own bucket, under the key "<prefix><bucket>:<value>", e.g. "rl:ip:203.0.113.42".
// After a check, wait until this many replicas have its write (Redis's WAIT), or the timeout
// passes. It narrows the window in which a failover forgets the last writes; it does not close
// it. Zero replicas: no wait.
struct ReplicaWait {
  int replicas = 0;
  int64_t timeout_ms = 0;

  bool operator==(const ReplicaWait&) const = default;
};

// How a rule counts. The token bucket and GCRA keep one bucket per key and decide alike for the
// same limit; GCRA keeps one number per key (less memory in Redis), the token bucket two. The
// fixed window counts requests in windows of `period`, at most `capacity` in each, and lets
// twice that through around a window's edge.
enum class Algorithm {
  kTokenBucket,  // tokens and the time of the last refill (docs/design.md's script)
  kGcra,         // the theoretical arrival time at which the bucket is full again
  kFixedWindow,  // a count per clock-aligned window: INCR and PEXPIRE
};

// The window of a durable rule (Rule::durable), beside a duration: a UTC calendar period. A
// calendar month or year is the calendar's (28 to 31 days; 365 or 366); envoyproxy/ratelimit's
// `month` and `year` units, which Sluice's rate limit service follows, are a fixed 30 and 365 days.
enum class CalendarPeriod {
  kNone,   // a window of Limit::period_ms, aligned to the Unix epoch as fixed windows are
  kDay,    // from 00:00 UTC
  kWeek,   // from Monday 00:00 UTC (ISO 8601 weeks)
  kMonth,  // from the 1st at 00:00 UTC
  kYear,   // from January 1st at 00:00 UTC
};

// "day", "week", "month" or "year"; "" for kNone.
std::string_view CalendarPeriodName(CalendarPeriod period);

// The period named `name` ("day", "week", "month", "year"); kNone for any other name.
CalendarPeriod CalendarPeriodNamed(std::string_view name);

// The longest a calendar period lasts, in ms (a month 31 days, a year 366): what a durable rule
// with that period keeps in Limit::period_ms. 0 for kNone.
int64_t LongestPeriodMs(CalendarPeriod period);

struct Rule {
  std::string name;       // for people, headers and metrics: "per-key"
  std::string attribute;  // the request attribute that keys it: "ip", "key", "header:X-Client"
  // The key's middle part; empty means the attribute's name. Two rules that count by the same
  // attribute (10 a second and 1,000 an hour per IP) need different buckets.
  std::string bucket;
  Limit limit;
  int64_t cost = 1;  // tokens one request takes, in [0, capacity]; 0 only looks
  // Counted, and reported in the decision, but never enforced: its rejections reject nothing.
  bool shadow = false;
  // When set, only requests with one of these methods (empty: any) and a path that starts with
  // `path_prefix` (empty: any) are checked against the rule.
  std::vector<std::string> methods = {};
  std::string path_prefix = {};
  // Limits of their own for particular attribute values: one API key with a bigger allowance.
  std::map<std::string, Limit, std::less<>> overrides = {};
  ReplicaWait wait = {};  // stores with replicas (Redis) only
  Algorithm algorithm = Algorithm::kTokenBucket;
  LocalCounting counting = {};  // token bucket only, when not kShared
  // When set, what a request costs is known only after the work is done (the tokens an LLM
  // response used): the request is checked with a look (cost 0, allowed unless the bucket is in
  // debt) and charged afterwards by Limiter::Report, into debt if need be. The gateway reads the
  // cost from the upstream response's header of this name. Token bucket rules counted in the
  // store (Counting::kShared) only.
  std::string cost_from_header = {};
  // Counted in the quota store (LimiterOptions::quota_store) rather than the rate limit store: a
  // fixed window (`algorithm` kFixedWindow) of `capacity` requests that is never exceeded and kept
  // durably, for quotas that are sold or billed. Checked only once every other rule has allowed
  // the request. Shared counting, no replica wait, no reported cost; overrides change only the
  // capacity.
  bool durable = false;
  // A durable rule's window when it is a calendar period; kNone: a window of limit.period_ms.
  // With a calendar period, limit.period_ms is LongestPeriodMs of it.
  CalendarPeriod calendar = CalendarPeriod::kNone;

  // The bucket family actually used: `bucket`, or the attribute when `bucket` is empty.
  std::string_view BucketName() const { return bucket.empty() ? attribute : bucket; }

  // Whether the rule's cost is reported after the work (cost_from_header).
  bool CostReported() const { return !cost_from_header.empty(); }

  // Whether each process counts the rule's requests itself (synced or leased counting), which
  // needs a LocalCountingStore in front of the shared store.
  bool CountsLocally() const { return counting.mode != Counting::kShared; }

  // The limit for requests whose attribute has `value`: an override, or `limit`.
  const Limit& LimitFor(std::string_view value) const;

  // Whether the request's method and path fall within the rule's route.
  bool MatchesRoute(const Request& request) const;

  // Ok when the name and attribute are well formed and the numbers are in range, overrides
  // included.
  Status Validate() const;
};

}  // namespace sluice
