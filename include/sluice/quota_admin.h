// The quota table for people and tools (`sluice quota`): a quota's count, set or reset, and the
// table made. Blocking, one connection, one statement at a time: not for the request path.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/postgres_options.h"
#include "sluice/quota_store.h"
#include "sluice/status.h"

struct pg_conn;  // libpq's PGconn

namespace sluice {

// A quota's count in the window that holds the database's present time. Unix milliseconds.
struct QuotaUsage {
  int64_t used = 0;
  int64_t window_start_ms = 0;
  int64_t window_end_ms = 0;
};

class QuotaAdmin {
 public:
  // Connects as a PostgresQuotaStore would (within its connect_timeout, at least 2 s: libpq's
  // least).
  static Result<std::unique_ptr<QuotaAdmin>> Connect(const PostgresOptions& options);
  ~QuotaAdmin();

  QuotaAdmin(const QuotaAdmin&) = delete;
  QuotaAdmin& operator=(const QuotaAdmin&) = delete;

  // Creates the table when it is missing and (re)creates the functions, in one transaction, then
  // checks the table's shape: kFailedPrecondition says what is wrong with it.
  Status Init();

  // The quota's count in its present window (0 when nothing was counted in it yet).
  Result<QuotaUsage> Get(std::string_view bucket, std::string_view value, QuotaWindow window);

  // Sets the quota's count in its present window (0: a reset), and announces the change to every
  // gateway (NOTIFY), which forgets the quota if it knew it spent.
  Result<QuotaUsage> Set(std::string_view bucket, std::string_view value, QuotaWindow window,
                         int64_t used);

 private:
  explicit QuotaAdmin(pg_conn* conn) : conn_(conn) {}

  // Fails with what is wrong when the table or functions are not there, or not right.
  Status ValidateShape();

  // Calls `function` (get or set; $5 the clock, $6 `used` when given) on the quota's window and
  // reads its (used, window_start, window_end).
  Result<QuotaUsage> Call(const std::string& function, std::string_view bucket,
                          std::string_view value, QuotaWindow window, std::optional<int64_t> used);

  pg_conn* conn_;
};

}  // namespace sluice
