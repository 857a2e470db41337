// The rate limit configuration of envoyproxy/ratelimit, read as that service reads it: one YAML
// file per domain, each a tree of descriptors (a key, an optional value, an optional rate limit,
// and nested descriptors), so that its files move to Sluice unchanged.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"

namespace sluice::rls {

// The units of envoyproxy/ratelimit, with the numbers of the protocol's Unit enum.
enum class Unit { kSecond = 1, kMinute = 2, kHour = 3, kDay = 4, kMonth = 5, kYear = 6, kWeek = 7 };

// How long one unit lasts: a month is 30 days and a year 365, as in envoyproxy/ratelimit.
int64_t UnitMs(Unit unit);

// A descriptor's `rate_limit`.
struct RateLimitPolicy {
  uint32_t requests_per_unit = 0;
  Unit unit = Unit::kSecond;     // meaningless when unlimited
  uint32_t unit_multiplier = 1;  // the period is this many units: 30 seconds, 5 minutes
  bool unlimited = false;        // matched and answered OK, never counted
  std::string name;
  std::vector<std::string> replaces;  // names of limits this one stands in for in a request
  bool quota_mode = false;  // over its limit, it makes a call OVER_LIMIT only with the others
  // Where it is in its domain's tree, as envoyproxy/ratelimit names its statistics: each level's
  // key, "_" and value when the node has one, joined by ".": "key_value.key2".
  std::string path;

  // The period, unit_multiplier units long.
  int64_t PeriodMs() const { return UnitMs(unit) * unit_multiplier; }
};

// One node of a domain's descriptor tree.
struct DescriptorNode {
  std::string key;
  // Empty: any value, each value counted on its own. With '*' anywhere (any number of times): a
  // pattern, each '*' standing for any run of characters, none included.
  std::string value;
  std::optional<RateLimitPolicy> rate_limit;
  bool shadow_mode = false;  // counted, reported, never over the limit
  bool quota_mode = false;   // its limit is in quota mode (as with rate_limit.quota_mode)
  // With a wildcard value: every matching value shares one bucket instead of one each.
  bool share_threshold = false;
  std::vector<DescriptorNode> descriptors;

  bool IsWildcard() const { return value.find('*') != std::string::npos; }
};

// One file: a domain and its descriptors.
struct DomainConfig {
  std::string domain;
  std::vector<DescriptorNode> descriptors;
  std::string source;  // the file, for messages
};

// Parses one file's text. Errors read "SOURCE:LINE: FIELD: what is wrong". Refused: unknown
// fields, a field given twice, an empty domain, a key without a name, two descriptors with the
// same key and value in one list, a unit other than second, minute, hour, day, week, month or year
// (any case), a unit beside `unlimited: true`, a unit_multiplier of 0 or making a period over 366
// days, and `replaces` naming no limit of the domain or the limit itself. Accepted and ignored:
// detailed_metric, value_to_metric, metadata.
Result<DomainConfig> ParseDomainConfig(std::string_view yaml, std::string_view source);

// Reads every file named, and every .yaml and .yml file directly inside every folder named (in
// name order). Fails on the first bad file, or when two files define one domain.
Result<std::vector<DomainConfig>> LoadDomainConfigs(const std::vector<std::string>& paths);

}  // namespace sluice::rls
