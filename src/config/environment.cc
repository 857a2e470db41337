#include "config/environment.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace sluice::config {
namespace {

bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool IsName(std::string_view name) {
  return !name.empty() && IsNameStart(name.front()) && std::ranges::all_of(name, IsNameChar);
}

}  // namespace

Result<std::string> ExpandEnvironment(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    if (text.starts_with("$${")) {
      out.append("${");
      text.remove_prefix(3);
      continue;
    }
    if (!text.starts_with("${")) {
      out.push_back(text.front());
      text.remove_prefix(1);
      continue;
    }
    const size_t close = text.find('}');
    if (close == std::string_view::npos) {
      return Status::InvalidArgument(R"("${" without its "}" (write $${ for a literal ${))");
    }
    const std::string name(text.substr(2, close - 2));
    if (!IsName(name)) {
      return Status::InvalidArgument("${" + name + "} is not a variable name");
    }
    // Safe beside other threads (a reload's): nothing in the process sets its environment.
    const char* value = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe)
    if (value == nullptr) return Status::InvalidArgument("${" + name + "} is not set");
    out.append(value);
    text.remove_prefix(close + 1);
  }
  return out;
}

}  // namespace sluice::config
