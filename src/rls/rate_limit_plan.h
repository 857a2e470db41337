// The pure logic of ShouldRateLimit, apart from the store and the transport: a request becomes a
// plan (one bucket operation per limited descriptor, all for one Store::Apply), and the store's
// replies become the response.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/rls_config.h"
#include "envoy/service/ratelimit/v3/rls.pb.h"
#include "rls/descriptor_matcher.h"
#include "sluice/status.h"
#include "sluice/store.h"
#include "sluice/token_bucket.h"

namespace sluice::rls {

using envoy::service::ratelimit::v3::RateLimitRequest;
using envoy::service::ratelimit::v3::RateLimitResponse;

// What one descriptor of the request was matched to.
struct MatchedDescriptor {
  enum class Kind { kNoLimit, kUnlimited, kLimited };
  Kind kind = Kind::kNoLimit;
  RateLimitPolicy limit;     // for kLimited: the configuration's or the descriptor's own
  bool shadow = false;       // never over the limit, whatever the bucket says
  bool quota_mode = false;   // over the limit, it makes the call OVER_LIMIT only with the others
  std::optional<size_t> op;  // for kLimited with requests_per_unit > 0: its bucket operation
  // For kLimited: the entries counted (key and value, or the pattern a shared bucket counts).
  std::vector<std::pair<std::string, std::string>> counted;
  // For kLimited: the configuration's limit it matched, null for the descriptor's own; for
  // statistics.
  const RateLimitPolicy* configured = nullptr;
  int64_t hits = 0;  // for kLimited: what the descriptor asks to count
};

// A call's bucket operations: one per limited descriptor, in the descriptors' order, each taking
// its hits into debt (envoyproxy/ratelimit counts every hit). Two descriptors with the same
// entries have an op each, on the same key: they are counted in turn.
struct Plan {
  std::string domain;
  std::vector<MatchedDescriptor> descriptors;  // one per request descriptor, in order
  std::vector<BucketOp> ops;                   // empty when nothing is limited
};

// The most descriptors one request may carry: every one can be a key in one script call, and
// Envoy sends a handful.
inline constexpr int kMaxDescriptors = 1024;

// Matches each descriptor and builds its bucket operation under "<prefix>rls:<domain>:<key>=
// <value>...", every part percent-encoded. Fails with kInvalidArgument on an empty domain, no
// descriptors or more than kMaxDescriptors, or a value too long for a key. A descriptor's own
// `limit` is used instead of the configuration's; descriptors whose limits another matched limit
// `replaces` have no limit. `quota_mode`: every limit of the call is in quota mode.
Result<Plan> PlanRequest(const DescriptorMatcher& matcher, const RateLimitRequest& request,
                         const std::string& key_prefix, bool quota_mode = false);

// The response for the store's replies (one per op). `headers`: add RateLimit headers.
RateLimitResponse Respond(const Plan& plan, const std::vector<BucketReply>& replies,
                          const std::optional<config::RlsHeaderNames>& headers);

// The response when the store could not be asked: limited, enforced descriptors are OK when
// `allow`, else OVER_LIMIT.
RateLimitResponse RespondUnchecked(const Plan& plan, bool allow);

// How a limited descriptor's limit is named where people see it: "DOMAIN/NAME" with the limit's
// name, else "DOMAIN/PATH" with its descriptor path (RateLimitPolicy::path), else, for a
// descriptor's own limit, its keys joined by ".".
std::string LimitLabel(const Plan& plan, const MatchedDescriptor& descriptor);

}  // namespace sluice::rls
