#include "sluice/postgres_options.h"

#include <libpq-fe.h>

#include <memory>

#include "password_file.h"

namespace sluice {
namespace {

struct ConninfoDeleter {
  void operator()(PQconninfoOption* options) const { PQconninfoFree(options); }
};

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// What is wrong with `url`, which libpq cannot read, in words of our own: libpq's message quotes
// the part it failed on (`invalid percent-encoded token: "<password>"`), or the whole URI, and the
// URI may hold a password in its userinfo or its query.
std::string Diagnose(std::string_view url) {
  for (size_t i = 0; i < url.size(); ++i) {
    if (url[i] != '%') continue;
    if (i + 2 >= url.size() || !IsHex(url[i + 1]) || !IsHex(url[i + 2])) {
      return "a '%' not followed by two hex digits (percent-encode special characters in the "
             "user name and password: '%' as %25, '@' as %40, ':' as %3A, '/' as %2F)";
    }
    if (url[i + 1] == '0' && url[i + 2] == '0') return "a percent-encoded NUL (%00)";
  }
  const size_t query = url.find('?');
  const std::string_view before_query = url.substr(0, query);
  const size_t open = before_query.find('[');
  if (open != std::string_view::npos) {
    const size_t close = before_query.find(']', open);
    if (close == std::string_view::npos || close == open + 1) {
      return "a bracketed IPv6 host address that is empty or not closed by ']'";
    }
  }
  if (query != std::string_view::npos) {
    return "a query parameter that is not one of libpq's or not of the form key=value";
  }
  return "unexpected characters after the host (expected ':port' or '/dbname')";
}

// libpq's reading of `url`, or what is wrong with it (never quoting it: it may hold a password).
Result<std::unique_ptr<PQconninfoOption, ConninfoDeleter>> Parse(const std::string& url) {
  char* error = nullptr;
  std::unique_ptr<PQconninfoOption, ConninfoDeleter> options(PQconninfoParse(url.c_str(), &error));
  PQfreemem(error);
  if (options == nullptr) {
    return Status::InvalidArgument("malformed postgresql:// URL: " + Diagnose(url));
  }
  return options;
}

}  // namespace

Result<std::string> PostgresPassword(const PostgresOptions& options) {
  if (options.password_file.empty()) return options.password;
  return stores::ReadPasswordFile("password_file", options.password_file);
}

Result<PostgresUrl> ParsePostgresUrl(std::string_view url) {
  if (!url.starts_with("postgresql://") && !url.starts_with("postgres://")) {
    return Status::InvalidArgument("must be a postgresql:// URI");
  }
  auto parsed = Parse(std::string(url));
  if (!parsed.ok()) return parsed.status();
  PostgresUrl parts{"localhost", "5432", "", "", false};
  for (const PQconninfoOption* option = parsed->get(); option->keyword != nullptr; ++option) {
    if (option->val == nullptr || *option->val == '\0') continue;
    const std::string_view keyword = option->keyword;
    if (keyword == "host") parts.host = option->val;
    if (keyword == "port") parts.port = option->val;
    if (keyword == "dbname") parts.dbname = option->val;
    if (keyword == "user") parts.user = option->val;
    if (keyword == "password") parts.has_password = true;
  }
  return parts;
}

std::string PostgresOptions::Describe() const {
  Result<PostgresUrl> parts = ParsePostgresUrl(url);
  if (!parts.ok()) return "postgres (an unreadable URL)";
  return "postgres " + parts->host + ":" + parts->port + "/" + parts->dbname;
}

}  // namespace sluice
