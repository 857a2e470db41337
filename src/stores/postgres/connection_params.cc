#include "connection_params.h"

namespace sluice::postgres {

Result<std::string> CheckedPassword(const PostgresOptions& options) {
  if (Result<PostgresUrl> url = ParsePostgresUrl(options.url); !url.ok()) return url.status();
  return PostgresPassword(options);
}

ConnectionParams ParamsOf(const PostgresOptions& options, const std::string& password) {
  // Later keywords win over what the URI in dbname gives.
  ConnectionParams params = {{"dbname", options.url}, {"fallback_application_name", "sluice"}};
  if (!password.empty()) params.emplace_back("password", password);
  return params;
}

}  // namespace sluice::postgres
