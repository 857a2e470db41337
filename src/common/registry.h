// Lookups in a registry: a list of kinds (store kinds, counting modes, algorithms), each named by
// one of its members.
#pragma once

#include <string_view>
#include <vector>

namespace sluice {

// The kind of `kinds` whose `name` member is `wanted`, or null.
template <typename Kind>
const Kind* FindNamed(const std::vector<Kind>& kinds, std::string_view Kind::*name,
                      std::string_view wanted) {
  for (const Kind& kind : kinds) {
    if (kind.*name == wanted) return &kind;
  }
  return nullptr;
}

// The `name` member of every kind, in the registry's order: the choices a field is given.
template <typename Kind>
std::vector<std::string_view> NamesOf(const std::vector<Kind>& kinds,
                                      std::string_view Kind::*name) {
  std::vector<std::string_view> names;
  names.reserve(kinds.size());
  for (const Kind& kind : kinds) names.push_back(kind.*name);
  return names;
}

// The kind one of whose `url_schemes` starts `url`, or null.
template <typename Kind>
const Kind* FindByScheme(const std::vector<Kind>& kinds, std::string_view url) {
  for (const Kind& kind : kinds) {
    for (std::string_view scheme : kind.url_schemes) {
      if (url.starts_with(scheme)) return &kind;
    }
  }
  return nullptr;
}

}  // namespace sluice
