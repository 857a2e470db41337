// What names in the configuration may be: rule names and bucket families end up in keys,
// headers, metrics and the quota table, so they stay plain.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace sluice {

// Whether `name` is 1 to `max_length` letters, digits, '-', '_' and '.'.
inline bool IsPlainName(std::string_view name, size_t max_length) {
  return !name.empty() && name.size() <= max_length &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_' || c == '.';
         });
}

}  // namespace sluice
