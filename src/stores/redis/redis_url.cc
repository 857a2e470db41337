#include <charconv>
#include <string>

#include "sluice/redis_options.h"

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

// "host", "host:port", "[::1]", "[::1]:port"; the port stays `port` when not given.
Status ParseHost(std::string_view text, std::string& host, uint16_t& port) {
  std::string_view name = text;
  std::string_view digits;
  if (text.starts_with('[')) {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return Status::InvalidArgument("redis URL: unclosed '['");
    name = text.substr(1, close - 1);
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return Status::InvalidArgument("redis URL: junk after ']'");
      digits = rest.substr(1);
    }
  } else if (const size_t colon = text.rfind(':'); colon != std::string_view::npos) {
    name = text.substr(0, colon);
    digits = text.substr(colon + 1);
  }
  if (name.empty()) return Status::InvalidArgument("redis URL has no host");
  host = std::string(name);
  if (!digits.empty() && (!ParseInt(digits, port) || port == 0)) {
    return Status::InvalidArgument("redis URL: the port is not a number from 1 to 65535");
  }
  return {};
}

// "user:password", "password" (common in redis:// URLs) or "user:".
Status ParseUserInfo(std::string_view info, RedisOptions& options) {
  const size_t colon = info.find(':');
  Result<std::string> user = PercentDecode(info.substr(0, colon));
  if (!user.ok()) return user.status();
  if (colon == std::string_view::npos) {
    options.password = std::move(user).value();
    return {};
  }
  Result<std::string> password = PercentDecode(info.substr(colon + 1));
  if (!password.ok()) return password.status();
  options.username = std::move(user).value();
  options.password = std::move(password).value();
  return {};
}

// "?db=N", the only query a URL takes.
Status ParseQuery(std::string_view query, RedisOptions& options) {
  if (query.empty()) return {};
  if (!query.starts_with("db=") || !ParseInt(query.substr(3), options.db) || options.db < 0) {
    return Status::InvalidArgument("redis URL: the only query is ?db=N, a database number");
  }
  return {};
}

// The authority's credentials, before the last '@'; `authority` keeps what follows.
Status TakeUserInfo(std::string_view& authority, RedisOptions& options) {
  const size_t at = authority.rfind('@');
  if (at == std::string_view::npos) return {};
  if (Status s = ParseUserInfo(authority.substr(0, at), options); !s.ok()) return s;
  authority.remove_prefix(at + 1);
  return {};
}

// redis:// and rediss://: [[user]:password@]host[:port][/db]
Status ParseServerUrl(std::string_view rest, RedisOptions& options) {
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    const std::string_view db = rest.substr(slash + 1);
    if (!db.empty() && (!ParseInt(db, options.db) || options.db < 0)) {
      return Status::InvalidArgument("redis URL: the database is not a number");
    }
  }
  if (Status s = TakeUserInfo(authority, options); !s.ok()) return s;
  return ParseHost(authority, options.host, options.port);
}

// unix:///path/to/redis.sock[?db=N]
Status ParseUnixUrl(std::string_view rest, RedisOptions& options) {
  const size_t question = rest.find('?');
  const std::string_view path = rest.substr(0, question);
  if (!path.starts_with('/')) {
    return Status::InvalidArgument("a unix URL names an absolute path: unix:///path/to/redis.sock");
  }
  options.unix_path = std::string(path);
  return ParseQuery(question == std::string_view::npos ? "" : rest.substr(question + 1), options);
}

// sentinel://[[user]:password@]host:port[,host:port...]/MASTER[?db=N]
Status ParseSentinelUrl(std::string_view rest, RedisOptions& options) {
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash + 1 == rest.size()) {
    return Status::InvalidArgument("a sentinel URL names the master: sentinel://host:port/MASTER");
  }
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = rest.substr(slash + 1);
  const size_t question = path.find('?');
  if (Status s =
          ParseQuery(question == std::string_view::npos ? "" : path.substr(question + 1), options);
      !s.ok()) {
    return s;
  }
  SentinelOptions sentinel;
  Result<std::string> master = PercentDecode(path.substr(0, question));
  if (!master.ok()) return master.status();
  sentinel.master = std::move(master).value();
  if (sentinel.master.empty()) return Status::InvalidArgument("a sentinel URL names the master");
  if (Status s = TakeUserInfo(authority, options); !s.ok()) return s;
  for (size_t comma = 0; comma != std::string_view::npos;) {
    comma = authority.find(',');
    Result<HostPort> node = ParseHostPort(authority.substr(0, comma));
    if (!node.ok()) return node.status();
    sentinel.sentinels.push_back(std::move(node).value());
    authority.remove_prefix(comma == std::string_view::npos ? authority.size() : comma + 1);
  }
  options.sentinel = std::move(sentinel);
  return {};
}

}  // namespace

Result<HostPort> ParseHostPort(std::string_view address) {
  HostPort node{"", 0};
  const bool has_port = address.starts_with('[') ? address.find("]:") != std::string_view::npos
                                                 : address.find(':') != std::string_view::npos;
  if (!has_port) return Status::InvalidArgument("an address must be host:port");
  if (Status s = ParseHost(address, node.first, node.second); !s.ok()) {
    return Status::InvalidArgument("an address must be host:port, with a port from 1 to 65535");
  }
  if (node.second == 0) return Status::InvalidArgument("an address must be host:port");
  return node;
}

Result<RedisOptions> ParseRedisUrl(std::string_view url) {
  RedisOptions options;
  Status parsed;
  if (url.starts_with("redis://")) {
    parsed = ParseServerUrl(url.substr(8), options);
  } else if (url.starts_with("rediss://")) {
    options.tls = TlsOptions{};
    parsed = ParseServerUrl(url.substr(9), options);
  } else if (url.starts_with("unix://")) {
    parsed = ParseUnixUrl(url.substr(7), options);
  } else if (url.starts_with("sentinel://")) {
    parsed = ParseSentinelUrl(url.substr(11), options);
  } else {
    return Status::InvalidArgument(
        "a store URL starts with redis://, rediss://, unix:// or sentinel://");
  }
  if (!parsed.ok()) return parsed;
  return options;
}

std::string RedisOptions::Describe() const {
  if (sentinel) return "redis sentinel master " + sentinel->master;
  if (!unix_path.empty()) return "redis unix:" + unix_path;
  const bool ipv6 = host.find(':') != std::string::npos;
  return std::string(tls ? "redis (TLS) " : "redis ") + (ipv6 ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

}  // namespace sluice
