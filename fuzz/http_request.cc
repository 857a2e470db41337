// An HTTP request as bytes, read as the server reads one and looked at as the gateway looks at
// it: Beast's request_parser with the server's default limits (fed as Session feeds it),
// NormalizeHostAndTarget, the framing check, then the client's address from the forwarding
// header (ClientAddress), the attributes the rules count by (RequestAttributes) and, for the
// check API, its JSON body (ParseCheckBody).
//
// Not the real Session over a socket: with Boost 1.74, clang 14 cannot assemble the server's and
// gateway's coroutines under ASan ("Cannot represent a difference across sections"), so the
// fuzz build has only the HTTP code without coroutines (sluice_http_parsing).
#include <boost/asio/ip/address.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "config/config.h"
#include "http/check_body.h"
#include "http/client_address.h"
#include "http/request_attributes.h"
#include "http/request_target.h"

namespace {

namespace bhttp = boost::beast::http;
using namespace sluice;
using HttpRequest = bhttp::request<bhttp::string_body, sluice::http::Fields>;

// Every attribute a rule can count by, behind a trusted proxy, so that the forwarding header
// is read too.
constexpr std::string_view kConfig = R"(
upstream: {address: 127.0.0.1:9000}
client:
  trusted_proxies: [127.0.0.0/8]
  api_key_header: X-Api-Key
  tenant_header: X-Tenant-Id
tenants: {ak_abc: org_acme}
rules:
  - {name: per-ip, key: ip, capacity: 1000000, period: 1s}
  - {name: per-key, key: key, capacity: 5, period: 1m, overrides: {ak_big: {capacity: 100}}}
  - {name: per-tenant, key: tenant, capacity: 10, period: 1h}
  - {name: per-header, key: "header:X-User", capacity: 3, period: 1s,
     match: {methods: [GET, POST], path_prefix: /api}}
)";

const config::Config& FixedConfig() {
  static const config::Config config = [] {
    Result<config::Config> parsed = config::ParseConfig(kConfig, "fuzz.yaml");
    if (!parsed.ok()) std::abort();
    return std::move(parsed).value();
  }();
  return config;
}

std::optional<std::string_view> Find(const HttpRequest& request, std::string_view name) {
  auto it = request.find(boost::beast::string_view(name.data(), name.size()));
  if (it == request.end()) return std::nullopt;
  return std::string_view(it->value().data(), it->value().size());
}

// What the gateway does with a request the server read.
void Handle(const HttpRequest& request) {
  const config::Config& config = FixedConfig();
  static const http::Peer peer(boost::asio::ip::make_address("127.0.0.1"));
  for (const auto header :
       {config::ForwardingHeader::kXForwardedFor, config::ForwardingHeader::kForwarded}) {
    const std::string_view name =
        header == config::ForwardingHeader::kForwarded ? "Forwarded" : "X-Forwarded-For";
    (void)http::ClientAddress(peer, Find(request, name).value_or(""), header,
                              config.client.trusted_proxies);
  }
  const std::string_view target(request.target().data(), request.target().size());
  const std::string_view method(request.method_string().data(), request.method_string().size());
  (void)http::RequestAttributes(config, "127.0.0.1", method, target.substr(0, target.find('?')),
                                [&request](std::string_view name) { return Find(request, name); });
  if (target == "/v1/check" || target == "/v1/report") (void)http::ParseCheckBody(request.body());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The server's defaults (ServerLimits), a smaller body so that the fuzzer need not send 10 MiB.
  bhttp::request_parser<bhttp::string_body, sluice::http::FieldAllocator<char>> parser;
  parser.header_limit(16 * 1024);
  parser.body_limit(64 * 1024);
  // As Session feeds it: all that one read brought (inputs are below its 64 KiB), put() again
  // while it takes some; need_more at the end of the bytes is a client that stopped sending.
  size_t consumed = 0;
  boost::beast::error_code ec;
  while (!parser.is_done()) {
    const size_t used = parser.put(boost::asio::const_buffer(data + consumed, size - consumed), ec);
    consumed += used;
    if (ec == bhttp::error::need_more || (!ec && used == 0)) break;
    if (ec) return 0;
  }
  if (!parser.is_header_done()) return 0;
  if (!http::NormalizeHostAndTarget(parser.get()).ok()) return 0;
  // An unframed body is refused by the server; a complete message is handled.
  if (!parser.is_done()) return 0;
  Handle(parser.get());
  return 0;
}
