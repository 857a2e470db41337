#include "sluice/quota_admin.h"

#include <libpq-fe.h>

#include <charconv>
#include <optional>
#include <string>
#include <vector>

#include "connection_params.h"
#include "pg_connection.h"
#include "quota_batch.h"
#include "quota_sql.h"

namespace sluice {
namespace {

using postgres::PgResult;

// Runs `sql` with text parameters; its last result, or the first error.
Result<PgResult> Exec(PGconn* conn, const std::string& sql,
                      const std::vector<std::optional<std::string>>& params = {}) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& param : params) values.push_back(param ? param->c_str() : nullptr);
  PgResult result(params.empty() ? PQexec(conn, sql.c_str())
                                 : PQexecParams(conn, sql.c_str(), static_cast<int>(values.size()),
                                                nullptr, values.data(), nullptr, nullptr, 0));
  if (result == nullptr) return Status::Unavailable(postgres::ErrorMessage(conn));
  if (Status error = postgres::ResultError(result.get()); !error.ok()) return error;
  return result;
}

bool ParseInt(const PGresult* result, int row, int column, int64_t& out) {
  const std::string_view text = PQgetvalue(result, row, column);
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

// The window's parameters of the get and set functions: the period's name, the duration.
std::vector<std::optional<std::string>> QuotaParams(std::string_view bucket, std::string_view value,
                                                    QuotaWindow window) {
  return {std::string(bucket), "\\x" + postgres::Hex(value),
          std::string(CalendarPeriodName(window.calendar)),
          std::to_string(window.calendar == CalendarPeriod::kNone ? window.duration_ms : 0)};
}

// A row of (used, window_start_ms, window_end_ms).
Result<QuotaUsage> UsageOf(const PGresult* result) {
  QuotaUsage usage;
  if (PQntuples(result) != 1 || PQnfields(result) != 3 || !ParseInt(result, 0, 0, usage.used) ||
      !ParseInt(result, 0, 1, usage.window_start_ms) ||
      !ParseInt(result, 0, 2, usage.window_end_ms)) {
    return Status::StoreError("the quota function answered a malformed row");
  }
  return usage;
}

// Validates the quota as the store would take it.
Status ValidateQuota(std::string_view bucket, std::string_view value, QuotaWindow window) {
  return ValidateQuotaOps({{std::string(bucket), std::string(value), 1, 0, window, true}});
}

}  // namespace

Result<std::unique_ptr<QuotaAdmin>> QuotaAdmin::Connect(const PostgresOptions& options) {
  Result<std::string> password = postgres::CheckedPassword(options);
  if (!password.ok()) return password.status();
  postgres::ConnectionParams params = postgres::ParamsOf(options, *password);
  params.emplace_back("connect_timeout", std::to_string(std::max<int64_t>(
                                             2, (options.connect_timeout.count() + 999) / 1000)));
  const postgres::ParamArrays arrays(params);
  PGconn* conn =
      PQconnectdbParams(arrays.keywords.data(), arrays.values.data(), /*expand_dbname=*/1);
  if (conn == nullptr || PQstatus(conn) != CONNECTION_OK) {
    Status error = Status::Unavailable(options.Describe() + ": " + postgres::ErrorMessage(conn));
    PQfinish(conn);
    return error;
  }
  return std::unique_ptr<QuotaAdmin>(new QuotaAdmin(conn));
}

QuotaAdmin::~QuotaAdmin() { PQfinish(conn_); }

Status QuotaAdmin::ValidateShape() {
  Result<PgResult> shape = Exec(conn_, std::string(postgres::QuotaShapeSql()));
  if (!shape.ok()) return shape.status();
  if (PQntuples(shape->get()) != 1) return Status::StoreError("the table's shape cannot be read");
  if (PQgetisnull(shape->get(), 0, 0) != 0) return {};
  const std::string problem = PQgetvalue(shape->get(), 0, 0);
  return Status::FailedPrecondition(
      problem == "missing"    ? "the quota table is missing: `sluice quota init` makes it (and so "
                                "does a gateway when it starts)"
      : problem == "outdated" ? "the quota table has the first schema's key (bucket, value, "
                                "window_start): `sluice quota init` as its owner gives it the "
                                "new one (and so does a gateway whose role owns it)"
                              : problem);
}

Status QuotaAdmin::Init() {
  if (Result<PgResult> made = Exec(conn_, std::string(postgres::QuotaSchemaSql())); !made.ok()) {
    return made.status();
  }
  return ValidateShape();
}

Result<QuotaUsage> QuotaAdmin::Get(std::string_view bucket, std::string_view value,
                                   QuotaWindow window) {
  return Call("sluice_quota_get_v2($1, $2::bytea, $3, $4::bigint, $5::timestamptz)", bucket, value,
              window, std::nullopt);
}

Result<QuotaUsage> QuotaAdmin::Set(std::string_view bucket, std::string_view value,
                                   QuotaWindow window, int64_t used) {
  if (used < 0 || used > Limit::kMaxCapacity) {
    return Status::InvalidArgument("used must be between 0 and " +
                                   std::to_string(Limit::kMaxCapacity));
  }
  return Call("sluice_quota_set_v2($1, $2::bytea, $3, $4::bigint, $6::bigint, $5::timestamptz)",
              bucket, value, window, used);
}

Result<QuotaUsage> QuotaAdmin::Call(const std::string& function, std::string_view bucket,
                                    std::string_view value, QuotaWindow window,
                                    std::optional<int64_t> used) {
  if (Status s = ValidateQuota(bucket, value, window); !s.ok()) return s;
  if (Status s = ValidateShape(); !s.ok()) return s;
  std::vector<std::optional<std::string>> params = QuotaParams(bucket, value, window);
  params.emplace_back(std::nullopt);  // the database's clock
  if (used) params.emplace_back(std::to_string(*used));
  Result<PgResult> result =
      Exec(conn_,
           "SELECT used, floor(extract(epoch FROM window_start) * 1000)::bigint, "
           "floor(extract(epoch FROM window_end) * 1000)::bigint FROM " +
               function,
           params);
  if (!result.ok()) return result.status();
  return UsageOf(result->get());
}

}  // namespace sluice
