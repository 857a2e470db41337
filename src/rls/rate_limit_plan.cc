#include "rls/rate_limit_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "sluice/bucket_key.h"

namespace sluice::rls {
namespace {

using Kind = MatchedDescriptor::Kind;
using Descriptor = envoy::extensions::common::ratelimit::v3::RateLimitDescriptor;

// A part of a key, percent-encoded as bucket keys encode values, so that it holds no ':' or '='
// and the parts of two different descriptors can never run together into one key.
Result<std::string> Encoded(std::string_view part) {
  Result<std::string> key = BucketKey("", "", part);
  if (!key.ok()) return key.status();
  return key->substr(1);  // BucketKey("", "", v) is ":" followed by the encoded value
}

// `own_limit`, when set, is the descriptor's own limit: it counts apart from the configuration's
// for the same entries, and apart from another own limit for them.
Result<std::string> KeyOf(const std::string& prefix, const std::string& domain,
                          const std::vector<std::pair<std::string, std::string>>& counted,
                          const RateLimitPolicy* own_limit) {
  Result<std::string> key = Encoded(domain);
  if (!key.ok()) return key;
  std::string result = prefix;
  if (own_limit != nullptr) {
    result.append("rls-own:")
        .append(std::to_string(own_limit->requests_per_unit))
        .append("/")
        .append(std::to_string(static_cast<int>(own_limit->unit)))
        .append(":");
  } else {
    result.append("rls:");
  }
  result.append(*key);
  for (const auto& [name, value] : counted) {
    Result<std::string> encoded_name = Encoded(name);
    Result<std::string> encoded_value = Encoded(value);
    if (!encoded_name.ok()) return encoded_name;
    if (!encoded_value.ok()) return encoded_value;
    result.append(":").append(*encoded_name).append("=").append(*encoded_value);
  }
  return result;
}

Entries EntriesOf(const Descriptor& descriptor) {
  Entries entries;
  entries.reserve(descriptor.entries_size());
  for (const auto& entry : descriptor.entries()) entries.emplace_back(entry.key(), entry.value());
  return entries;
}

// The descriptor's own limit, when it brings one with a known unit.
std::optional<RateLimitPolicy> OwnLimit(const Descriptor& descriptor) {
  if (!descriptor.has_limit()) return std::nullopt;
  const int unit = descriptor.limit().unit();
  if (unit < static_cast<int>(Unit::kSecond) || unit > static_cast<int>(Unit::kWeek)) {
    return std::nullopt;
  }
  RateLimitPolicy policy;
  policy.requests_per_unit = descriptor.limit().requests_per_unit();
  policy.unit = static_cast<Unit>(unit);
  return policy;
}

// The descriptor's hits, within what a bucket operation may carry (a debt is bounded anyway).
int64_t CostOf(const Descriptor& descriptor, const RateLimitRequest& request) {
  uint64_t hits = 0;
  if (descriptor.has_hits_addend()) {
    hits = descriptor.hits_addend().value();
  } else {
    hits = request.hits_addend() == 0 ? 1 : request.hits_addend();
  }
  return static_cast<int64_t>(std::min<uint64_t>(hits, Limit::kMaxCapacity));
}

// Drops the limits that another matched limit replaces.
void DropReplacedLimits(std::vector<MatchedDescriptor>& planned) {
  std::set<std::string> replaced;
  for (const MatchedDescriptor& p : planned) {
    replaced.insert(p.limit.replaces.begin(), p.limit.replaces.end());
  }
  for (MatchedDescriptor& p : planned) {
    if (p.kind != Kind::kNoLimit && !p.limit.name.empty() && replaced.contains(p.limit.name)) {
      p = MatchedDescriptor{};
    }
  }
}

// A limited descriptor's answer: over or not, and what its bucket says.
struct Verdict {
  bool over = false;
  int64_t remaining = 0;
  int64_t reset_ms = 0;
};

void SetStatus(RateLimitResponse::DescriptorStatus& status, const MatchedDescriptor& p,
               const Verdict& verdict) {
  status.set_code(verdict.over && !p.shadow && !p.quota_mode ? RateLimitResponse::OVER_LIMIT
                                                             : RateLimitResponse::OK);
  if (p.kind == Kind::kUnlimited) {
    status.set_limit_remaining(std::numeric_limits<uint32_t>::max());
    return;
  }
  if (p.kind == Kind::kNoLimit) return;
  auto* limit = status.mutable_current_limit();
  limit->set_name(p.limit.name);
  limit->set_requests_per_unit(p.limit.requests_per_unit);
  limit->set_unit(static_cast<RateLimitResponse::RateLimit::Unit>(p.limit.unit));
  status.set_limit_remaining(
      static_cast<uint32_t>(std::clamp<int64_t>(verdict.remaining, 0, UINT32_MAX)));
  status.mutable_duration_until_reset()->set_seconds(verdict.reset_ms / 1000);
  status.mutable_duration_until_reset()->set_nanos(static_cast<int32_t>(verdict.reset_ms % 1000) *
                                                   1'000'000);
}

// The statuses and the overall code for `verdicts` (one per descriptor). Descriptors in quota
// mode make the call OVER_LIMIT only when every one of them is over, and then say so.
RateLimitResponse StatusesOf(const Plan& plan, const std::vector<Verdict>& verdicts) {
  RateLimitResponse response;
  bool quotas = false;
  bool every_quota_over = true;
  for (size_t i = 0; i < plan.descriptors.size(); ++i) {
    const MatchedDescriptor& p = plan.descriptors[i];
    SetStatus(*response.add_statuses(), p, verdicts[i]);
    if (p.kind == Kind::kLimited && p.quota_mode && !p.shadow) {
      quotas = true;
      every_quota_over &= verdicts[i].over;
    }
  }
  for (size_t i = 0; quotas && every_quota_over && i < plan.descriptors.size(); ++i) {
    const MatchedDescriptor& p = plan.descriptors[i];
    if (p.kind == Kind::kLimited && p.quota_mode && !p.shadow) {
      response.mutable_statuses(static_cast<int>(i))->set_code(RateLimitResponse::OVER_LIMIT);
    }
  }
  const bool over =
      std::any_of(response.statuses().begin(), response.statuses().end(),
                  [](const auto& s) { return s.code() == RateLimitResponse::OVER_LIMIT; });
  response.set_overall_code(over ? RateLimitResponse::OVER_LIMIT : RateLimitResponse::OK);
  return response;
}

// Whether the headers describe `status` rather than `chosen`, the one before it they would
// describe: a later one over the limit wins, else one with fewer requests left.
bool OutranksForHeaders(const RateLimitResponse::DescriptorStatus& status,
                        const RateLimitResponse::DescriptorStatus* chosen) {
  if (status.code() == RateLimitResponse::OVER_LIMIT || chosen == nullptr) return true;
  return chosen->code() != RateLimitResponse::OVER_LIMIT &&
         status.limit_remaining() < chosen->limit_remaining();
}

// The descriptor envoyproxy/ratelimit describes in its headers: the last one over the limit,
// else the first with the fewest requests left.
const RateLimitResponse::DescriptorStatus* HeaderDescriptor(const RateLimitResponse& response) {
  const RateLimitResponse::DescriptorStatus* chosen = nullptr;
  for (const auto& status : response.statuses()) {
    if (status.has_current_limit() && OutranksForHeaders(status, chosen)) chosen = &status;
  }
  return chosen;
}

void AddHeaders(RateLimitResponse& response, const config::RlsHeaderNames& names) {
  const RateLimitResponse::DescriptorStatus* described = HeaderDescriptor(response);
  if (described == nullptr) return;
  const int64_t reset_ms = described->duration_until_reset().seconds() * 1000 +
                           described->duration_until_reset().nanos() / 1'000'000;
  auto add = [&](const std::string& name, uint64_t value) {
    auto* header = response.add_response_headers_to_add();
    header->set_key(name);
    header->set_value(std::to_string(value));
  };
  add(names.limit, described->current_limit().requests_per_unit());
  add(names.remaining, described->limit_remaining());
  add(names.reset, static_cast<uint64_t>((reset_ms + 999) / 1000));
}

}  // namespace

Result<Plan> PlanRequest(const DescriptorMatcher& matcher, const RateLimitRequest& request,
                         const std::string& key_prefix, bool quota_mode) {
  if (request.domain().empty()) {
    return Status::InvalidArgument("rate limit domain must not be empty");
  }
  if (request.descriptors().empty()) {
    return Status::InvalidArgument("rate limit descriptor list must not be empty");
  }
  if (request.descriptors_size() > kMaxDescriptors) {
    return Status::InvalidArgument("more than " + std::to_string(kMaxDescriptors) +
                                   " descriptors in one request");
  }
  Plan plan;
  plan.domain = request.domain();
  std::vector<std::vector<std::pair<std::string, std::string>>> counted(request.descriptors_size());
  std::vector<bool> own(request.descriptors_size());
  plan.descriptors.resize(request.descriptors_size());
  for (int i = 0; i < request.descriptors_size(); ++i) {
    const Descriptor& descriptor = request.descriptors(i);
    MatchedDescriptor& planned = plan.descriptors[i];
    std::optional<RateLimitPolicy> own_limit = OwnLimit(descriptor);
    if (own_limit && matcher.HasDomain(request.domain())) {
      planned = {Kind::kLimited, *own_limit, false,   quota_mode,
                 std::nullopt,   {},         nullptr, CostOf(descriptor, request)};
      own[i] = true;
      for (const auto& entry : descriptor.entries())
        counted[i].emplace_back(entry.key(), entry.value());
    } else if (std::optional<Match> match = matcher.Find(request.domain(), EntriesOf(descriptor))) {
      planned.kind = match->limit->unlimited ? Kind::kUnlimited : Kind::kLimited;
      planned.limit = *match->limit;
      planned.shadow = match->shadow_mode;
      planned.quota_mode = quota_mode || match->quota_mode;
      planned.configured = match->limit;
      planned.hits = CostOf(descriptor, request);
      counted[i] = std::move(match->counted);
    }
  }
  DropReplacedLimits(plan.descriptors);
  for (int i = 0; i < request.descriptors_size(); ++i) {
    MatchedDescriptor& planned = plan.descriptors[i];
    if (planned.kind != Kind::kLimited || planned.limit.requests_per_unit == 0) continue;
    Result<std::string> key =
        KeyOf(key_prefix, request.domain(), counted[i], own[i] ? &planned.limit : nullptr);
    if (!key.ok())
      return Status::InvalidArgument("descriptors[" + std::to_string(i) +
                                     "]: " + key.status().message());
    const auto per_period = static_cast<int64_t>(planned.limit.requests_per_unit);
    BucketOp op;
    op.key = std::move(key).value();
    op.limit = {per_period, per_period, planned.limit.PeriodMs()};
    op.cost = planned.hits;
    op.debt = true;
    op.enforced = !planned.shadow && !planned.quota_mode;
    planned.op = plan.ops.size();
    planned.counted = std::move(counted[i]);
    plan.ops.push_back(std::move(op));
  }
  return plan;
}

RateLimitResponse Respond(const Plan& plan, const std::vector<BucketReply>& replies,
                          const std::optional<config::RlsHeaderNames>& headers) {
  std::vector<Verdict> verdicts;
  verdicts.reserve(plan.descriptors.size());
  for (const MatchedDescriptor& p : plan.descriptors) {
    if (!p.op) {  // no limit, unlimited, or a limit of 0: over whatever the call asks
      verdicts.push_back({p.kind == Kind::kLimited, 0, 0});
      continue;
    }
    const BucketReply& reply = replies.at(*p.op);
    verdicts.push_back({!reply.allowed, reply.remaining, reply.reset_ms});
  }
  RateLimitResponse response = StatusesOf(plan, verdicts);
  if (headers) AddHeaders(response, *headers);
  return response;
}

std::string LimitLabel(const Plan& plan, const MatchedDescriptor& descriptor) {
  std::string label = plan.domain + "/";
  if (!descriptor.limit.name.empty()) return label + descriptor.limit.name;
  if (!descriptor.limit.path.empty()) return label + descriptor.limit.path;
  for (size_t i = 0; i < descriptor.counted.size(); ++i) {
    label.append(i == 0 ? "" : ".").append(descriptor.counted[i].first);
  }
  return label;
}

RateLimitResponse RespondUnchecked(const Plan& plan, bool allow) {
  std::vector<Verdict> verdicts;
  verdicts.reserve(plan.descriptors.size());
  for (const MatchedDescriptor& p : plan.descriptors) {
    const bool zero = p.kind == Kind::kLimited && !p.op;
    verdicts.push_back({p.kind == Kind::kLimited && (zero || !allow), 0, 0});
  }
  return StatusesOf(plan, verdicts);
}

}  // namespace sluice::rls
