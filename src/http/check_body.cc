#include "http/check_body.h"

#include <nlohmann/json.hpp>

#include "sluice/rule.h"

namespace sluice::http {

using json = nlohmann::json;

Result<Request> ParseCheckBody(const std::string& body) {
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::InvalidArgument("the body is not JSON");
  if (!doc.is_object()) return Status::InvalidArgument("the body must be a JSON object");
  Request request;
  if (auto it = doc.find("attributes"); it != doc.end()) {
    if (!it->is_object()) return Status::InvalidArgument("\"attributes\" must be an object");
    for (const auto& [name, value] : it->items()) {
      if (!value.is_string()) {
        return Status::InvalidArgument("attribute \"" + name + "\" must be a string");
      }
      request.Set(name, value.get<std::string>());
    }
  } else {
    return Status::InvalidArgument("the body needs \"attributes\"");
  }
  std::string method;
  std::string path;
  for (auto [field, target] : {std::pair{"method", &method}, std::pair{"path", &path}}) {
    if (auto it = doc.find(field); it != doc.end()) {
      if (!it->is_string())
        return Status::InvalidArgument(std::string("\"") + field + "\" must be a string");
      *target = it->get<std::string>();
    }
  }
  request.SetRoute(std::move(method), std::move(path));
  if (auto it = doc.find("cost"); it != doc.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 ||
        it->get<int64_t>() > Limit::kMaxCapacity) {
      return Status::InvalidArgument("\"cost\" must be a whole number from 0 to " +
                                     std::to_string(Limit::kMaxCapacity));
    }
    request.SetCost(it->get<int64_t>());
  }
  return request;
}

}  // namespace sluice::http
