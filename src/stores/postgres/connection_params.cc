#include "connection_params.h"

namespace sluice::postgres {

ConnectionParams ParamsOf(const PostgresOptions& options, const std::string& password) {
  // Later keywords win over what the URI in dbname gives.
  ConnectionParams params = {{"dbname", options.url}, {"fallback_application_name", "sluice"}};
  if (!password.empty()) params.emplace_back("password", password);
  return params;
}

}  // namespace sluice::postgres
