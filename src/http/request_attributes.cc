#include "http/request_attributes.h"

namespace sluice::http {
namespace {

std::optional<std::string> NonEmpty(const HeaderLookup& header, std::string_view name) {
  if (name.empty()) return std::nullopt;
  std::optional<std::string_view> value = header(name);
  if (!value || value->empty()) return std::nullopt;
  return std::string(*value);
}

}  // namespace

Request RequestAttributes(const config::Config& config, std::string client_ip,
                          std::string_view method, std::string_view path,
                          const HeaderLookup& header) {
  Request request;
  request.Set("ip", std::move(client_ip));
  std::optional<std::string> key = NonEmpty(header, config.client.api_key_header);
  std::optional<std::string> tenant;
  if (key) {
    if (auto it = config.tenants.find(*key); it != config.tenants.end()) tenant = it->second;
    request.Set("key", std::move(*key));
  }
  if (!tenant) tenant = NonEmpty(header, config.client.tenant_header);
  if (tenant) request.Set("tenant", std::move(*tenant));
  constexpr std::string_view kHeader = "header:";
  for (const Rule& rule : config.rules) {
    if (!rule.attribute.starts_with(kHeader)) continue;
    if (auto value = NonEmpty(header, std::string_view(rule.attribute).substr(kHeader.size()))) {
      request.Set(rule.attribute, std::move(*value));
    }
  }
  request.SetRoute(std::string(method), std::string(path));
  return request;
}

}  // namespace sluice::http
