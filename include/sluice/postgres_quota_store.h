// Durable quotas in PostgreSQL, shared by every gateway that points at the same database.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sluice/postgres_options.h"
#include "sluice/quota_store.h"

namespace sluice {

namespace postgres {
class QuotaPool;
}

// Counters of a PostgresQuotaStore, for metrics and tests.
struct PostgresQuotaStats {
  uint64_t statements = 0;  // batches sent: one statement, one transaction, one commit each
  uint64_t checks = 0;      // checks those statements carried
  uint64_t connects = 0;    // connections made, the first ones included
  uint64_t timeouts = 0;    // checks failed with kDeadlineExceeded
  uint64_t errors = 0;      // checks failed otherwise
  uint64_t cleaned = 0;     // rows of ended windows deleted by this store
  uint64_t cleanups = 0;    // rounds of deletion answered, whatever they deleted
};

// A QuotaStore on PostgreSQL (libpq, asynchronous), on a thread of its own with `pool`
// connections. A check is one call of a PL/pgSQL function (src/stores/postgres/quota_schema.sql)
// that locks its quotas' rows (creating them in their window), decides, and writes them, all in one
// statement and so one transaction, with the database's clock (now()) deciding the windows: every
// gateway counts against one total, whatever their own clocks say. Checks that arrive while every
// connection has a statement in flight wait and go together in the next one (group commit): one
// commit, one WAL flush, for all of them, each check still all or nothing and decided in the order
// they arrived. A check is answered once its statement has committed (with synchronous_commit on,
// once the commit is on disk, or on a synchronous standby). The table and functions are created
// when missing; a table of the wrong shape is refused (WaitReady says why). Every
// `cleanup_interval`, ended windows are deleted in batches, by one gateway at a time (an advisory
// lock). A quota seen spent is remembered until its window ends (KnownRejection), bounded by
// `spent_quotas`, and forgotten when `sluice quota set` or `reset` announces a change (LISTEN
// sluice_quota). While no connection is up, checks fail at once with kUnavailable; a connection
// that breaks (a crash of the server, a failover) is made again with jittered backoff, and the
// checks it carried fail with kUnavailable (they may have been counted: never more than the limit).
class PostgresQuotaStore final : public QuotaStore {
 public:
  // Starts the thread and the connections. When the password file cannot be read, no connection
  // is made and every check fails with the reason.
  explicit PostgresQuotaStore(PostgresOptions options);
  // Checks still waiting fail with kUnavailable; the thread is joined.
  ~PostgresQuotaStore() override;

  PostgresQuotaStore(const PostgresQuotaStore&) = delete;
  PostgresQuotaStore& operator=(const PostgresQuotaStore&) = delete;

  void Take(std::vector<QuotaOp> ops, QuotaCallback done) override;
  std::optional<QuotaReply> KnownRejection(const QuotaOp& op) const override;
  // True while a connection is up and the table is known to be right.
  bool Ready() const override;
  // The server (Describe()), whether it is ready, and the statements' round trips.
  std::vector<StoreNodeStatus> Nodes() const override;

  // Waits until Ready(), a problem no retry fixes (the table's shape: kFailedPrecondition; the
  // server refusing the password: kUnavailable with refused() true), or `timeout`; ok when ready,
  // else the problem or the last error.
  Status WaitReady(std::chrono::milliseconds timeout) const;

  // Whether the server refused the credentials at the last attempt (a wrong password), which
  // trying again without a new password will not change.
  bool refused() const;

  // Why the last connection ended or attempt failed; empty until one has. For logs and
  // operators, never for clients: it names the server.
  std::string LastError() const;

  // The password as its file holds it now (a reload's first step: it may fail, and changes
  // nothing).
  Result<std::string> ReadPassword() const;

  // Puts `password`, from ReadPassword, in force for the connections made from now on.
  void UsePassword(std::string password);

  PostgresQuotaStats Stats() const;

 private:
  // A store whose windows are those of the time `window_time` returns
  // (src/stores/postgres/quota_store_at.h).
  friend std::unique_ptr<PostgresQuotaStore> QuotaStoreAt(PostgresOptions options,
                                                          std::function<std::string()> window_time);
  PostgresQuotaStore(PostgresOptions options, std::function<std::string()> window_time);

  std::shared_ptr<postgres::QuotaPool> pool_;
};

}  // namespace sluice
