#include "sluice/postgres_options.h"

#include <libpq-fe.h>

#include <memory>

#include "password_file.h"

namespace sluice {
namespace {

struct ConninfoDeleter {
  void operator()(PQconninfoOption* options) const { PQconninfoFree(options); }
};

// libpq's reading of `url`, or why it cannot read it (its message never quotes a password).
Result<std::unique_ptr<PQconninfoOption, ConninfoDeleter>> Parse(const std::string& url) {
  char* error = nullptr;
  std::unique_ptr<PQconninfoOption, ConninfoDeleter> options(PQconninfoParse(url.c_str(), &error));
  if (options == nullptr) {
    std::string message = error != nullptr ? error : "out of memory";
    PQfreemem(error);
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
      message.pop_back();
    }
    return Status::InvalidArgument("not a libpq connection URI: " + message);
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
