// What a limiter knows of a request: named attributes such as ip, key and tenant.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice {

// One attribute of a request: {"ip", "203.0.113.42"}.
struct Attribute {
  std::string name;
  std::string value;
};

// A request's attributes. A rule whose attribute is absent does not apply to the request.
class Request {
 public:
  Request() = default;
  Request(std::initializer_list<Attribute> attributes) : attributes_(attributes) {}

  // Sets `name` to `value`, replacing an earlier value.
  Request& Set(std::string_view name, std::string value);

  // The value of `name`, or nullptr when the request has no such attribute.
  const std::string* Find(std::string_view name) const;

  const std::vector<Attribute>& attributes() const { return attributes_; }

  // The HTTP method and path, for rules limited to a route; empty when not HTTP.
  Request& SetRoute(std::string method, std::string path);
  const std::string& method() const { return method_; }
  const std::string& path() const { return path_; }

  // The tokens this request takes from each of its rules, in place of each rule's own `cost`
  // (0: look without taking); unset, the rules' costs.
  Request& SetCost(int64_t cost);
  const std::optional<int64_t>& cost() const { return cost_; }

 private:
  std::vector<Attribute> attributes_;
  std::string method_;
  std::string path_;
  std::optional<int64_t> cost_;
};

}  // namespace sluice
