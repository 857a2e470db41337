#include "rls/descriptor_matcher.h"

#include <algorithm>

namespace sluice::rls {
namespace {

// How specific a wildcard pattern is: its characters other than '*'.
size_t Literals(std::string_view pattern) {
  return pattern.size() - static_cast<size_t>(std::count(pattern.begin(), pattern.end(), '*'));
}

void VisitLimits(const std::string& domain, const std::string& parent,
                 const std::vector<DescriptorNode>& nodes,
                 const std::function<void(const std::string&, const std::string&,
                                          const RateLimitPolicy&)>& each) {
  for (const DescriptorNode& node : nodes) {
    std::string path = parent.empty() ? node.key : parent + "." + node.key;
    if (!node.value.empty()) path += "_" + node.value;
    if (node.rate_limit && !node.rate_limit->unlimited) each(domain, path, *node.rate_limit);
    VisitLimits(domain, path, node.descriptors, each);
  }
}

}  // namespace

// Greedy with one backtrack point: a later '*' makes the earlier ones' choices final, so no
// pattern takes more than (pattern length x value length) steps, however many '*' it has.
bool MatchesWildcard(std::string_view pattern, std::string_view value) {
  size_t p = 0;
  size_t v = 0;
  size_t star = std::string_view::npos;  // the last '*' seen in the pattern
  size_t resume = 0;                     // where in the value that '*' stops matching
  while (v < value.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = v;
    } else if (p < pattern.size() && pattern[p] == value[v]) {
      ++p;
      ++v;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      v = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

struct DescriptorMatcher::Level {
  struct Child {
    const DescriptorNode* node = nullptr;
    std::unique_ptr<Level> children;
  };

  // key -> value -> node
  std::map<std::string, std::map<std::string, Child, std::less<>>, std::less<>> exact;
  std::map<std::string, Child, std::less<>> any_value;
  // (key, pattern) of wildcard values, the most specific first.
  std::vector<std::pair<std::pair<std::string, std::string>, Child>> wildcards;

  explicit Level(const std::vector<DescriptorNode>& nodes) {
    for (const DescriptorNode& node : nodes) {
      Child child{&node, std::make_unique<Level>(node.descriptors)};
      if (node.value.empty()) {
        any_value.emplace(node.key, std::move(child));
      } else if (node.IsWildcard()) {
        wildcards.emplace_back(std::pair(node.key, node.value), std::move(child));
      } else {
        exact[node.key].emplace(node.value, std::move(child));
      }
    }
    std::stable_sort(wildcards.begin(), wildcards.end(), [](const auto& a, const auto& b) {
      return Literals(a.first.second) > Literals(b.first.second);
    });
  }

  const Child* Find(std::string_view key, std::string_view value) const {
    if (auto values = exact.find(key); values != exact.end()) {
      if (auto it = values->second.find(value); it != values->second.end()) return &it->second;
    }
    for (const auto& [pattern, child] : wildcards) {
      if (pattern.first == key && MatchesWildcard(pattern.second, value)) return &child;
    }
    if (auto it = any_value.find(key); it != any_value.end()) return &it->second;
    return nullptr;
  }
};

DescriptorMatcher::DescriptorMatcher(std::vector<DomainConfig> domains)
    : domains_(std::move(domains)) {
  for (const DomainConfig& domain : domains_) {
    roots_.emplace(domain.domain, std::make_unique<Level>(domain.descriptors));
  }
}

DescriptorMatcher::~DescriptorMatcher() = default;

bool DescriptorMatcher::HasDomain(std::string_view domain) const {
  return roots_.find(domain) != roots_.end();
}

void DescriptorMatcher::ForEachLimit(
    const std::function<void(const std::string&, const std::string&, const RateLimitPolicy&)>& each)
    const {
  for (const DomainConfig& domain : domains_)
    VisitLimits(domain.domain, "", domain.descriptors, each);
}

std::optional<Match> DescriptorMatcher::Find(std::string_view domain,
                                             const Entries& entries) const {
  auto root = roots_.find(domain);
  if (root == roots_.end()) return std::nullopt;
  const Level* level = root->second.get();
  Match match;
  const Level::Child* child = nullptr;
  for (const auto& [key, value] : entries) {
    child = level->Find(key, value);
    if (child == nullptr) return std::nullopt;
    const bool shared = child->node->share_threshold && child->node->IsWildcard();
    match.counted.emplace_back(key, shared ? child->node->value : value);
    level = child->children.get();
  }
  if (child == nullptr || !child->node->rate_limit) return std::nullopt;
  match.limit = &*child->node->rate_limit;
  match.shadow_mode = child->node->shadow_mode;
  match.quota_mode = child->node->quota_mode || match.limit->quota_mode;
  return match;
}

}  // namespace sluice::rls
