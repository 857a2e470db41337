// A blocking HTTP/1.1 client for end-to-end tests, and a raw one for malformed requests.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sluice::testing {

struct HttpResult {
  int status = 0;                              // 0: no response (connection failed or closed)
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;

  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? "" : it->second;
  }
};

// One request on a new connection to 127.0.0.1:`port`.
HttpResult Fetch(uint16_t port, const std::string& method, const std::string& target,
                 const std::vector<std::pair<std::string, std::string>>& headers = {},
                 const std::string& body = "");

// Writes `bytes` (from `trickle_from` on, with `pause` between single bytes when set), then reads
// until the server closes or `timeout` passes; returns what was read.
std::string RawExchange(uint16_t port, const std::string& bytes, std::chrono::milliseconds timeout,
                        std::chrono::milliseconds pause = std::chrono::milliseconds(0),
                        size_t trickle_from = 0);

}  // namespace sluice::testing
