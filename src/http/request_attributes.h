// A request's rate limit attributes, from what an HTTP request carries and the configuration.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.h"
#include "sluice/request.h"

namespace sluice::http {

// Looks up a request header by name (case-insensitively); nullopt when absent.
using HeaderLookup = std::function<std::optional<std::string_view>(std::string_view name)>;

// Builds the limiter's request: `ip` is `client_ip`; `key` is the API key header's value;
// `tenant` is the key's tenant from `tenants`, or else the tenant header's value; and
// `header:NAME` for every rule that counts by a header. An absent or empty header sets no
// attribute, so the rules that count by it do not apply. Method and path go to SetRoute.
Request RequestAttributes(const config::Config& config, std::string client_ip,
                          std::string_view method, std::string_view path,
                          const HeaderLookup& header);

}  // namespace sluice::http
