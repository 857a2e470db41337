// Where durable rules count: quotas that are never exceeded and are kept durably (a million calls
// a month per tenant), apart from the rate limit store, which may forget its last writes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sluice/rule.h"
#include "sluice/status.h"
#include "sluice/store.h"

namespace sluice {

// A quota's window: a UTC calendar period, or a duration aligned to the Unix epoch.
struct QuotaWindow {
  CalendarPeriod calendar = CalendarPeriod::kNone;
  int64_t duration_ms = 0;  // when calendar is kNone, in [1, Limit::kMaxPeriodMs]

  friend bool operator==(const QuotaWindow&, const QuotaWindow&) = default;
};

// The window of a durable rule.
QuotaWindow WindowOf(const Rule& rule);

// One durable rule's part in a check: take `cost` from the quota of (`bucket`, `value`) in its
// window that holds the store's present time.
struct QuotaOp {
  std::string bucket;  // the rule's bucket family: a name of letters, digits, '-', '_', '.'
  std::string value;   // the attribute's value: any bytes, at most kMaxAttributeValueBytes
  int64_t limit = 0;   // most a window allows, in [1, Limit::kMaxCapacity]
  int64_t cost = 1;    // in [0, Limit::kMaxCapacity]; 0 only looks
  QuotaWindow window;
  // Whether this op's rejection stops every charge of the check (a shadow rule's does not).
  bool enforced = true;
};

// Ok when every op is well formed (as QuotaOp says) and no two name the same quota (bucket and
// value); stores refuse other ops with kInvalidArgument.
Status ValidateQuotaOps(const std::vector<QuotaOp>& ops);

// What the store answered for one op. Times are the store's clock, in Unix milliseconds.
struct QuotaReply {
  bool allowed = false;  // the op fits in what its window has left: used before + cost <= limit
  bool charged = false;  // its cost was taken (every enforced op of the check fitted)
  int64_t used = 0;      // the window's count after the check
  int64_t window_start_ms = 0;
  int64_t window_end_ms = 0;
  int64_t now_ms = 0;  // the store's clock when it decided

  friend bool operator==(const QuotaReply&, const QuotaReply&) = default;
};

// Called once with one reply per op, in order, or with the error that stopped them; must
// neither block nor throw (it runs on a thread of the store's own).
using QuotaCallback = std::function<void(Result<std::vector<QuotaReply>>)>;

// A store of quotas. Implementations are safe to call from many threads.
class QuotaStore {
 public:
  virtual ~QuotaStore() = default;

  // Takes the ops' costs in one atomic step: when every enforced op fits, each op that fits is
  // charged; otherwise none is. Concurrent checks never together exceed a limit, and `done` is
  // called with the replies only once the charge is durable (an error or timeout instead may
  // leave it charged or not: never more than the limit).
  virtual void Take(std::vector<QuotaOp> ops, QuotaCallback done) = 0;

  // What the store knows without asking: when `op` (enforced, with a positive cost) cannot fit
  // because its quota was seen spent in a window that has not ended, the reply it would get. None
  // when the store would have to ask.
  virtual std::optional<QuotaReply> KnownRejection(const QuotaOp& /*op*/) const {
    return std::nullopt;
  }

  // Whether the store can be asked now (for /readyz).
  virtual bool Ready() const = 0;

  // The servers behind the store, as Store::Nodes.
  virtual std::vector<StoreNodeStatus> Nodes() const { return {}; }
};

}  // namespace sluice
