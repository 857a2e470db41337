// A quota store that counts windows at a time its caller gives rather than the database's now():
// how the tests cross a month's or a year's edge without waiting for it. Internal.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "sluice/postgres_quota_store.h"

namespace sluice {

// `window_time` returns a timestamp PostgreSQL reads ("2025-01-31 23:59:59.999+00"), or empty
// for the database's now(); each statement's windows are those of its answer.
std::unique_ptr<PostgresQuotaStore> QuotaStoreAt(PostgresOptions options,
                                                 std::function<std::string()> window_time);

}  // namespace sluice
