// The design's (docs/design.md) relational database: the token bucket as one SQL statement per
// check, an UPDATE ... RETURNING (an INSERT ... ON CONFLICT DO UPDATE ... RETURNING, since no row
// means a full bucket, as no key does for the script). Built only to be measured against the script
// (bench/baselines_bench) and held to its answers (tests/stores/baselines_test.cc); never a store
// of the limiter.
//
// A row keeps what the script's hash keeps, `tokens` and `ts`, and the statement does the
// script's arithmetic in the same IEEE doubles, with the rate as two integers, milliseconds and
// the elapsed time clamped at 0, on the database's clock read after the row is locked (as the
// script reads TIME inside its atomic step), so that a check that waited for the row never
// counts a refill twice. The one row lock is the whole of the atomicity: concurrent checks of one
// bucket wait for each other's commit. Unlike the script's keys, rows never expire: a full
// bucket's row means the same as none, and clearing rows would take a job of its own.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <optional>
#include <string>

#include "baselines.h"
#include "sluice/rule.h"

namespace sluice::baselines {

class PostgresClient {
 public:
  // Creates the buckets' table when it is missing. Call once before clients check: concurrent
  // CREATE TABLE IF NOT EXISTS can fail on the catalog's unique index.
  static void CreateTable(const std::string& conninfo);

  // How many times PostgreSQL has synced its WAL to disk (pg_stat_wal.wal_sync), once no other
  // client is connected (a backend reports its counts when it ends) and the WAL writer has
  // reported its own (every wal_writer_delay, 200 ms by default). Throws std::runtime_error on
  // an error, or when clients stay connected for 10 s.
  static int64_t WalSyncs(const std::string& conninfo);

  // Connects with libpq's `conninfo` ("host=127.0.0.1 port=5432 user=... dbname=..."), sets
  // `synchronous_commit` for the session (on: a check answers after its commit is flushed to
  // disk; off: after it is written, the flush a moment later), and prepares the statement.
  // Throws std::runtime_error if it cannot.
  PostgresClient(const std::string& conninfo, bool synchronous_commit);
  ~PostgresClient();
  PostgresClient(const PostgresClient&) = delete;
  PostgresClient& operator=(const PostgresClient&) = delete;

  // Takes `cost` tokens from the bucket at `key` if they are there: one statement, one round
  // trip, its own transaction. `now_ms` replaces the database's clock (tests); without it the
  // database's clock_timestamp() is read. Throws std::runtime_error on an error.
  Outcome Check(const std::string& key, const Limit& limit, int64_t cost = 1,
                std::optional<int64_t> now_ms = std::nullopt);

 private:
  PGconn* conn_ = nullptr;
};

}  // namespace sluice::baselines
