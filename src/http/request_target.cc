#include "http/request_target.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "http/string_views.h"

namespace sluice::http {
namespace {

namespace bhttp = boost::beast::http;

bool IsRegNameChar(unsigned char c) {
  static constexpr std::string_view kOthers = "-._~%!$&'()*+,;=";
  return std::isalnum(c) != 0 || kOthers.find(static_cast<char>(c)) != std::string_view::npos;
}

bool IsIpLiteralChar(unsigned char c) {
  return std::isxdigit(c) != 0 || c == ':' || c == '.' || c == 'v' || c == 'V';
}

bool IsPort(std::string_view port) {
  return std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c); });
}

// The scheme's length with its "://" when `target` is absolute-form http or https; 0 when it is
// no URI at all (origin, asterisk or authority form); npos for another scheme.
size_t AbsolutePrefix(std::string_view target) {
  const size_t colon = target.find("://");
  if (colon == std::string_view::npos || target.starts_with('/')) return 0;
  std::string scheme(target.substr(0, colon));
  std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (scheme == "http" || scheme == "https") return colon + 3;
  return std::string_view::npos;
}

}  // namespace

bool IsValidHost(std::string_view host) {
  std::string_view name = host;
  std::string_view port;
  if (host.starts_with('[')) {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    const std::string_view literal = host.substr(1, close - 1);
    if (literal.empty() || !std::all_of(literal.begin(), literal.end(),
                                        [](unsigned char c) { return IsIpLiteralChar(c); })) {
      return false;
    }
    const std::string_view rest = host.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(':')) return false;
    return rest.empty() || IsPort(rest.substr(1));
  }
  if (const size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    name = host.substr(0, colon);
    port = host.substr(colon + 1);
    if (!IsPort(port)) return false;
  }
  return std::all_of(name.begin(), name.end(), [](unsigned char c) { return IsRegNameChar(c); });
}

Status NormalizeHostAndTarget(bhttp::request<bhttp::string_body, Fields>& request) {
  const auto hosts = request.count(bhttp::field::host);
  if (hosts > 1) return Status::InvalidArgument("more than one Host field");
  const std::string_view target = StdView(request.target());
  const size_t prefix = AbsolutePrefix(target);
  if (prefix == std::string_view::npos) {
    return Status::InvalidArgument("a target of a scheme other than http or https");
  }
  if (prefix > 0) {
    const std::string_view rest = target.substr(prefix);
    const size_t path = rest.find_first_of("/?");
    const std::string_view authority = rest.substr(0, path);
    // userinfo has no place in an http(s) URI's authority (RFC 9110 4.2.4).
    if (authority.empty() || authority.find('@') != std::string_view::npos ||
        !IsValidHost(authority)) {
      return Status::InvalidArgument("an invalid authority in the target");
    }
    std::string origin = path == std::string_view::npos ? "/" : std::string(rest.substr(path));
    if (origin.starts_with('?')) origin.insert(0, "/");
    request.set(bhttp::field::host, BeastView(authority));
    request.target(origin);
    return {};
  }
  if (hosts == 0) {
    if (request.version() >= 11) return Status::InvalidArgument("an HTTP/1.1 request without Host");
    return {};
  }
  if (!IsValidHost(StdView(request[bhttp::field::host]))) {
    return Status::InvalidArgument("an invalid Host");
  }
  return {};
}

}  // namespace sluice::http
