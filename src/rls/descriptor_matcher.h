// Finds the rate limit of a request descriptor in the loaded domains, as envoyproxy/ratelimit does:
// the descriptor's entries walk down a domain's tree one level each, and the limit is the one on
// the node the last entry reaches.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rls/descriptor_config.h"

namespace sluice::rls {

// A request descriptor's entries: (key, value) in order.
using Entries = std::vector<std::pair<std::string_view, std::string_view>>;

// The rate limit a descriptor matched.
struct Match {
  const RateLimitPolicy* limit = nullptr;
  bool shadow_mode = false;
  bool quota_mode = false;  // the node's or its rate_limit's
  // What counts: per level, the key and the request's value, or the configured pattern when the
  // node shares one bucket among the values it matches (share_threshold).
  std::vector<std::pair<std::string, std::string>> counted;
};

// Whether `value` matches `pattern`, each '*' in which stands for any run of characters.
bool MatchesWildcard(std::string_view pattern, std::string_view value);

// Immutable once built; safe to share between threads.
class DescriptorMatcher {
 public:
  explicit DescriptorMatcher(std::vector<DomainConfig> domains);
  ~DescriptorMatcher();
  DescriptorMatcher(const DescriptorMatcher&) = delete;
  DescriptorMatcher& operator=(const DescriptorMatcher&) = delete;

  bool HasDomain(std::string_view domain) const;

  // Calls `each` with every configured limit that counts (unlimited ones do not), its domain,
  // and its descriptor path as envoyproxy/ratelimit names it in its statistics: the nodes from
  // the root, each "key" or "key_value" (the configured value, a wildcard pattern as written),
  // joined by '.'. Never a request's value.
  void ForEachLimit(const std::function<void(const std::string& domain, const std::string& path,
                                             const RateLimitPolicy& limit)>& each) const;

  // At each level the most specific node wins: key and value, then the wildcard pattern with the
  // most characters other than '*' (the first in the file among equals), then the key alone;
  // there is no going back up to try a less specific one. Nothing when the
  // domain is unknown, an entry matches nothing, or the last entry's node has no rate limit.
  std::optional<Match> Find(std::string_view domain, const Entries& entries) const;

  struct Level;  // one list of sibling descriptors, indexed

 private:
  std::vector<DomainConfig> domains_;
  std::map<std::string, std::unique_ptr<Level>, std::less<>> roots_;
};

}  // namespace sluice::rls
