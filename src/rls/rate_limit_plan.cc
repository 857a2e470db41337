#include "rls/rate_limit_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>

#include "sluice/bucket_key.h"

namespace sluice::rls {
namespace {

using Kind = PlannedDescriptor::Kind;
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

uint64_t CostOf(const Descriptor& descriptor, const RateLimitRequest& request) {
  if (descriptor.has_hits_addend()) return descriptor.hits_addend().value();
  return request.hits_addend() == 0 ? 1 : request.hits_addend();
}

// Adds the descriptor's cost to the op for `key` (two descriptors with the same entries share
// one bucket: a store takes distinct keys), making the op first if needed. `ops_by_key` indexes
// the plan's ops.
void Charge(Plan& plan, std::unordered_map<std::string, size_t>& ops_by_key,
            PlannedDescriptor& planned, std::string key, uint64_t cost) {
  const auto capacity = static_cast<int64_t>(planned.limit.requests_per_unit);
  auto [index, added] = ops_by_key.try_emplace(key, plan.ops.size());
  if (added) {
    BucketOp op;
    op.key = std::move(key);
    op.limit = {capacity, capacity, UnitMs(planned.limit.unit)};
    op.cost = 0;
    plan.ops.push_back(std::move(op));
  }
  planned.op = index->second;
  planned.check_only = cost == 0;
  BucketOp& op = plan.ops[index->second];
  // More than the bucket holds is over the limit at once; the op then only looks, so that the
  // answer still says what is left.
  if (cost > static_cast<uint64_t>(capacity - op.cost)) {
    planned.over_by_cost = true;
  } else {
    op.cost += static_cast<int64_t>(cost);
  }
}

// Drops the limits that another matched limit replaces.
void ApplyReplaces(std::vector<PlannedDescriptor>& planned) {
  std::set<std::string> replaced;
  for (const PlannedDescriptor& p : planned) {
    replaced.insert(p.limit.replaces.begin(), p.limit.replaces.end());
  }
  for (PlannedDescriptor& p : planned) {
    if (p.kind != Kind::kNoLimit && !p.limit.name.empty() && replaced.contains(p.limit.name)) {
      p = PlannedDescriptor{};
    }
  }
}

// Milliseconds until a bucket with `remaining` of `limit` is full again.
int64_t MsUntilFull(const RateLimitPolicy& limit, int64_t remaining) {
  const int64_t missing = std::max<int64_t>(0, limit.requests_per_unit - remaining);
  if (limit.requests_per_unit == 0 || missing == 0) return 0;
  const int64_t period = UnitMs(limit.unit);
  // In doubles, since missing x period can pass 2^63; rounded up: never promise a token before
  // it is there.
  return static_cast<int64_t>(std::ceil(static_cast<double>(missing) * static_cast<double>(period) /
                                        limit.requests_per_unit));
}

void SetStatus(RateLimitResponse::DescriptorStatus& status, const PlannedDescriptor& p, bool over,
               int64_t remaining) {
  status.set_code(over && !p.shadow ? RateLimitResponse::OVER_LIMIT : RateLimitResponse::OK);
  if (p.kind == Kind::kUnlimited) {
    status.set_limit_remaining(std::numeric_limits<uint32_t>::max());
    return;
  }
  if (p.kind == Kind::kNoLimit) return;
  auto* limit = status.mutable_current_limit();
  limit->set_name(p.limit.name);
  limit->set_requests_per_unit(p.limit.requests_per_unit);
  limit->set_unit(static_cast<RateLimitResponse::RateLimit::Unit>(p.limit.unit));
  status.set_limit_remaining(static_cast<uint32_t>(std::clamp<int64_t>(remaining, 0, UINT32_MAX)));
  const int64_t reset_ms = MsUntilFull(p.limit, remaining);
  status.mutable_duration_until_reset()->set_seconds(reset_ms / 1000);
  status.mutable_duration_until_reset()->set_nanos(static_cast<int32_t>(reset_ms % 1000) *
                                                   1'000'000);
}

void AddHeaders(RateLimitResponse& response, const Plan& plan,
                const config::RlsHeaderNames& names) {
  const RateLimitResponse::DescriptorStatus* tightest = nullptr;
  for (size_t i = 0; i < plan.descriptors.size(); ++i) {
    const auto& status = response.statuses(static_cast<int>(i));
    if (plan.descriptors[i].kind != Kind::kLimited || plan.descriptors[i].shadow) continue;
    if (tightest == nullptr || status.limit_remaining() < tightest->limit_remaining()) {
      tightest = &status;
    }
  }
  if (tightest == nullptr) return;
  const int64_t reset_ms = tightest->duration_until_reset().seconds() * 1000 +
                           tightest->duration_until_reset().nanos() / 1'000'000;
  auto add = [&](const std::string& name, uint64_t value) {
    auto* header = response.add_response_headers_to_add();
    header->set_key(name);
    header->set_value(std::to_string(value));
  };
  add(names.limit, tightest->current_limit().requests_per_unit());
  add(names.remaining, tightest->limit_remaining());
  add(names.reset, static_cast<uint64_t>((reset_ms + 999) / 1000));
}

void SetOverall(RateLimitResponse& response) {
  const bool over =
      std::any_of(response.statuses().begin(), response.statuses().end(),
                  [](const auto& s) { return s.code() == RateLimitResponse::OVER_LIMIT; });
  response.set_overall_code(over ? RateLimitResponse::OVER_LIMIT : RateLimitResponse::OK);
}

}  // namespace

Result<Plan> PlanRequest(const DescriptorMatcher& matcher, const RateLimitRequest& request,
                         const std::string& key_prefix) {
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
  std::vector<std::vector<std::pair<std::string, std::string>>> counted(request.descriptors_size());
  plan.descriptors.resize(request.descriptors_size());
  for (int i = 0; i < request.descriptors_size(); ++i) {
    const Descriptor& descriptor = request.descriptors(i);
    PlannedDescriptor& planned = plan.descriptors[i];
    std::optional<Match> match = matcher.Find(request.domain(), EntriesOf(descriptor));
    std::optional<RateLimitPolicy> own = OwnLimit(descriptor);
    if (own && matcher.HasDomain(request.domain())) {
      planned = {Kind::kLimited, *own, false, std::nullopt, false};
      for (const auto& entry : descriptor.entries())
        counted[i].emplace_back(entry.key(), entry.value());
    } else if (match) {
      planned.kind = match->limit->unlimited ? Kind::kUnlimited : Kind::kLimited;
      planned.limit = *match->limit;
      planned.shadow = match->shadow_mode;
      counted[i] = std::move(match->counted);
    }
  }
  ApplyReplaces(plan.descriptors);
  std::unordered_map<std::string, size_t> ops_by_key;
  for (int i = 0; i < request.descriptors_size(); ++i) {
    PlannedDescriptor& planned = plan.descriptors[i];
    if (planned.kind != Kind::kLimited) continue;
    if (planned.limit.requests_per_unit == 0) {
      planned.over_by_cost = true;
      continue;
    }
    const bool own =
        OwnLimit(request.descriptors(i)).has_value() && matcher.HasDomain(request.domain());
    Result<std::string> key =
        KeyOf(key_prefix, request.domain(), counted[i], own ? &planned.limit : nullptr);
    if (!key.ok())
      return Status::InvalidArgument("descriptors[" + std::to_string(i) +
                                     "]: " + key.status().message());
    Charge(plan, ops_by_key, planned, std::move(key).value(),
           CostOf(request.descriptors(i), request));
  }
  return plan;
}

RateLimitResponse Respond(const Plan& plan, const std::vector<BucketReply>& replies,
                          const std::optional<config::RlsHeaderNames>& headers) {
  RateLimitResponse response;
  for (const PlannedDescriptor& p : plan.descriptors) {
    const BucketReply* reply = p.op ? &replies.at(*p.op) : nullptr;
    const bool over =
        p.over_by_cost ||
        (reply != nullptr && (!reply->allowed || (p.check_only && reply->remaining < 1)));
    SetStatus(*response.add_statuses(), p, over, reply != nullptr ? reply->remaining : 0);
  }
  SetOverall(response);
  if (headers) AddHeaders(response, plan, *headers);
  return response;
}

RateLimitResponse RespondUnchecked(const Plan& plan, bool allow) {
  RateLimitResponse response;
  for (const PlannedDescriptor& p : plan.descriptors) {
    const bool over = p.kind == Kind::kLimited && (p.over_by_cost || !allow);
    SetStatus(*response.add_statuses(), p, over, 0);
  }
  SetOverall(response);
  return response;
}

}  // namespace sluice::rls
