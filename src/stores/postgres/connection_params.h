// What a quota store's connections (and `sluice quota`'s) give libpq.
#pragma once

#include <string>

#include "pg_connection.h"
#include "sluice/postgres_options.h"
#include "sluice/status.h"

namespace sluice::postgres {

// The password PostgresPassword gives, once the URL is one libpq reads: libpq's message for one it
// cannot read quotes it, password and all, and would reach logs and `sluice check`.
Result<std::string> CheckedPassword(const PostgresOptions& options);

// The URL, the password when there is one, and the application name unless the URL gives one.
ConnectionParams ParamsOf(const PostgresOptions& options, const std::string& password);

}  // namespace sluice::postgres
