#include <charconv>
#include <string>

#include "sluice/redis_store.h"

namespace sluice {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<std::string> PercentDecode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size() || HexValue(text[i + 1]) < 0 || HexValue(text[i + 2]) < 0) {
      return Status::InvalidArgument("bad percent-encoding in redis URL");
    }
    out.push_back(static_cast<char>(HexValue(text[i + 1]) * 16 + HexValue(text[i + 2])));
    i += 2;
  }
  return out;
}

template <typename Int>
bool ParseInt(std::string_view text, Int& value) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

Status ParseHostPort(std::string_view text, RedisOptions& options) {
  std::string_view host = text;
  std::string_view port;
  if (text.starts_with('[')) {  // [::1]:6379
    size_t close = text.find(']');
    if (close == std::string_view::npos) return Status::InvalidArgument("redis URL: unclosed '['");
    host = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return Status::InvalidArgument("redis URL: junk after ']'");
      port = rest.substr(1);
    }
  } else if (size_t colon = text.rfind(':'); colon != std::string_view::npos) {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty()) return Status::InvalidArgument("redis URL has no host");
  options.host = std::string(host);
  if (!port.empty() && (!ParseInt(port, options.port) || options.port == 0)) {
    return Status::InvalidArgument("redis URL: bad port \"" + std::string(port) + "\"");
  }
  return {};
}

Status ParseUserInfo(std::string_view info, RedisOptions& options) {
  size_t colon = info.find(':');
  Result<std::string> user = PercentDecode(info.substr(0, colon));
  if (!user.ok()) return user.status();
  options.username = *user;
  if (colon == std::string_view::npos) {  // redis://password@host is common; so is user@host
    options.password = std::move(options.username);
    options.username.clear();
    return {};
  }
  Result<std::string> password = PercentDecode(info.substr(colon + 1));
  if (!password.ok()) return password.status();
  options.password = *password;
  return {};
}

}  // namespace

Result<RedisOptions> ParseRedisUrl(std::string_view url) {
  constexpr std::string_view kScheme = "redis://";
  if (!url.starts_with(kScheme)) {
    return Status::InvalidArgument("redis URL must start with redis:// (got \"" +
                                   std::string(url.substr(0, 32)) + "\")");
  }
  RedisOptions options;
  std::string_view rest = url.substr(kScheme.size());
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view db = rest.substr(slash + 1);
    if (!db.empty() && (!ParseInt(db, options.db) || options.db < 0)) {
      return Status::InvalidArgument("redis URL: bad database number \"" + std::string(db) + "\"");
    }
  }
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
    if (Status s = ParseUserInfo(authority.substr(0, at), options); !s.ok()) return s;
    authority = authority.substr(at + 1);
  }
  if (Status s = ParseHostPort(authority, options); !s.ok()) return s;
  return options;
}

}  // namespace sluice
