// What a script call of bucket checks looks like on the wire: the scripts and functions by
// algorithm, the codes that shape a call, and the reading of its reply.
#pragma once

#include <hiredis/hiredis.h>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/redis_options.h"
#include "sluice/status.h"
#include "sluice/store.h"

namespace sluice::redis {

inline constexpr std::array kAlgorithms = {Algorithm::kTokenBucket, Algorithm::kGcra,
                                           Algorithm::kFixedWindow};

inline size_t Index(Algorithm algorithm) { return static_cast<size_t>(algorithm); }

// The scripts as embedded at build time (generated scripts.cc): the token bucket in each
// layout, GCRA and the fixed window.
std::string_view TokenBucketHashScript();
std::string_view TokenBucketCompactScript();
std::string_view GcraScript();
std::string_view FixedWindowScript();

// The name `algorithm`'s script, in `layout`, is registered under in the function library.
std::string_view FunctionName(Algorithm algorithm, BucketLayout layout);

// Appends one check's codes for calls.lua, one per op: in an all-or-nothing check, '1' for each
// op whose rejection charges none, else '0'; in another, 'u' takes up to the cost, 'd' takes it
// into debt, '0' is plain.
void AppendCodes(std::string& codes, const std::vector<BucketOp>& ops, bool all_or_nothing);

// The integers a script call answers for each op: allowed (for an up_to op, the tokens it
// took), remaining, retry_ms, and ms until the bucket is full.
inline constexpr size_t kRepliesPerOp = 4;

// Whether `reply` has the shape of a script call's answer for `ops` ops in all: an array of
// kRepliesPerOp elements each (which ParseBucketReplies then reads without further bounds).
bool IsBucketCallReply(const redisReply& reply, size_t ops);

// One check's part of a script call's reply, from element `offset`, kRepliesPerOp for each op
// in turn; or the server's error when one of the check's keys could not be read.
Result<std::vector<BucketReply>> ParseBucketReplies(const redisReply& reply, size_t offset,
                                                    const std::vector<BucketOp>& ops);

// The server no longer has the code: a restart, SCRIPT FLUSH, failover, or FUNCTION FLUSH.
bool IsMissingCode(std::string_view error);

// A cluster node's answer about where a call's declared keys are: MOVED, ASK when one is gone
// from a migrating slot, TRYAGAIN when some are and some are not. For a call of several checks,
// that may be about another check's keys than this one's.
bool IsRedirection(std::string_view error);

// A cluster node's refusal of an undeclared key of a slot it does not hold (moved, or migrating
// and the key gone) or of any key while the cluster is down: about that check's keys alone.
bool IsNotHeldHere(std::string_view error);

// The server is a replica now (a failover demoted it): its writes are refused.
bool IsReadOnly(std::string_view error);

}  // namespace sluice::redis
