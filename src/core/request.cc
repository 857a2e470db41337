#include "sluice/request.h"

#include <algorithm>

namespace sluice {

Request& Request::Set(std::string_view name, std::string value) {
  auto it = std::find_if(attributes_.begin(), attributes_.end(),
                         [name](const Attribute& a) { return a.name == name; });
  if (it != attributes_.end()) {
    it->value = std::move(value);
  } else {
    attributes_.push_back({std::string(name), std::move(value)});
  }
  return *this;
}

Request& Request::SetRoute(std::string method, std::string path) {
  method_ = std::move(method);
  path_ = std::move(path);
  return *this;
}

Request& Request::SetCost(int64_t cost) {
  cost_ = cost;
  return *this;
}

const std::string* Request::Find(std::string_view name) const {
  for (const Attribute& a : attributes_) {
    if (a.name == name) return &a.value;
  }
  return nullptr;
}

}  // namespace sluice
