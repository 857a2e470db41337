#include "postgres_baseline.h"

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <thread>

namespace sluice::baselines {
namespace {

// `allowed` is the last check's verdict: RETURNING sees only the row as written, and from the
// tokens left alone it cannot tell a check that took them from one that found too few.
constexpr const char* kCreateTable =
    "CREATE TABLE IF NOT EXISTS baseline_buckets ("
    "key text PRIMARY KEY, tokens float8 NOT NULL, ts bigint NOT NULL, allowed boolean NOT NULL)";

// $1 the key, $2 the capacity, $3 tokens added per period, $4 the period in ms, $5 the cost, $6
// the time in ms or NULL for the database's clock. token_bucket.lua step for step: a missing row
// is a full bucket (the INSERT); an existing one is refilled at per_ms = $3 / $4 for the time
// since its ts, clamped at 0 and capped at the capacity, then the cost is taken if it is there
// (the UPDATE). The UPDATE's clock is read in its sub-select, which runs once the row is locked.
// Returns what the script returns: allowed, whole tokens left, retry_ms, ms until full.
constexpr const char* kTakeTokens = R"sql(
INSERT INTO baseline_buckets AS b (key, tokens, ts, allowed)
SELECT $1, CASE WHEN $2 >= $5 THEN least($2, $2 - $5) ELSE $2 END,
       coalesce($6, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint), $2 >= $5
ON CONFLICT (key) DO UPDATE SET (tokens, ts, allowed) = (
  SELECT CASE WHEN refill.tokens >= $5 THEN least($2, refill.tokens - $5) ELSE refill.tokens END,
         clock.now, refill.tokens >= $5
  FROM (SELECT coalesce($6, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) AS now)
         AS clock,
       LATERAL (SELECT least($2, b.tokens + greatest(0, clock.now - b.ts) * ($3 / $4)) AS tokens)
         AS refill)
RETURNING allowed, greatest(0, floor(tokens))::bigint,
          (CASE WHEN allowed THEN 0 ELSE ceil(($5 - tokens) / ($3 / $4)) END)::bigint,
          greatest(0, ceil(($2 - tokens) / ($3 / $4)))::bigint
)sql";

constexpr Oid kText = 25, kFloat8 = 701, kInt8 = 20;
constexpr Oid kTakeTokensTypes[] = {kText, kFloat8, kFloat8, kFloat8, kFloat8, kInt8};

struct ResultDeleter {
  void operator()(PGresult* result) const { PQclear(result); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

[[noreturn]] void Fail(std::string_view what, PGconn* conn) {
  throw std::runtime_error(std::string(what) + ": " + PQerrorMessage(conn));
}

void Expect(const PgResult& result, ExecStatusType status, std::string_view what, PGconn* conn) {
  if (PQresultStatus(result.get()) != status) Fail(what, conn);
}

PGconn* Connect(const std::string& conninfo) {
  PGconn* conn = PQconnectdb(conninfo.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    const std::string why = PQerrorMessage(conn);
    PQfinish(conn);
    throw std::runtime_error("cannot connect to PostgreSQL: " + why);
  }
  return conn;
}

}  // namespace

void PostgresClient::CreateTable(const std::string& conninfo) {
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(Connect(conninfo), &PQfinish);
  // Not the notice that the table is there already.
  Expect(PgResult(PQexec(conn.get(), "SET client_min_messages = warning")), PGRES_COMMAND_OK,
         "SET client_min_messages", conn.get());
  Expect(PgResult(PQexec(conn.get(), kCreateTable)), PGRES_COMMAND_OK, "CREATE TABLE", conn.get());
}

int64_t PostgresClient::WalSyncs(const std::string& conninfo) {
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(Connect(conninfo), &PQfinish);
  const auto first_value = [&](const char* sql) {
    const PgResult result(PQexec(conn.get(), sql));
    Expect(result, PGRES_TUPLES_OK, sql, conn.get());
    return std::stoll(PQgetvalue(result.get(), 0, 0));
  };
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (first_value("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                     "AND pid <> pg_backend_pid()") > 0) {
    if (std::chrono::steady_clock::now() > give_up) {
      throw std::runtime_error("other clients are still connected to PostgreSQL");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  return first_value("SELECT wal_sync FROM pg_stat_wal");
}

PostgresClient::PostgresClient(const std::string& conninfo, bool synchronous_commit)
    : conn_(Connect(conninfo)) {
  try {
    const std::string set =
        std::string("SET synchronous_commit = ") + (synchronous_commit ? "on" : "off");
    Expect(PgResult(PQexec(conn_, set.c_str())), PGRES_COMMAND_OK, "SET synchronous_commit", conn_);
    Expect(PgResult(PQprepare(conn_, "take_tokens", kTakeTokens, 6, kTakeTokensTypes)),
           PGRES_COMMAND_OK, "PREPARE", conn_);
  } catch (...) {
    PQfinish(conn_);  // the destructor does not run when the constructor throws
    throw;
  }
}

PostgresClient::~PostgresClient() { PQfinish(conn_); }

Outcome PostgresClient::Check(const std::string& key, const Limit& limit, int64_t cost,
                              std::optional<int64_t> now_ms) {
  const std::string numbers[] = {std::to_string(limit.capacity), std::to_string(limit.tokens),
                                 std::to_string(limit.period_ms), std::to_string(cost),
                                 now_ms ? std::to_string(*now_ms) : std::string()};
  const char* values[] = {key.c_str(),        numbers[0].c_str(),
                          numbers[1].c_str(), numbers[2].c_str(),
                          numbers[3].c_str(), now_ms ? numbers[4].c_str() : nullptr};
  const PgResult result(PQexecPrepared(conn_, "take_tokens", 6, values, nullptr, nullptr, 0));
  Expect(result, PGRES_TUPLES_OK, "take_tokens", conn_);
  if (PQntuples(result.get()) != 1 || PQnfields(result.get()) != 4) {
    throw std::runtime_error("take_tokens: not one row of four values");
  }
  const auto number = [&](int field) { return std::stoll(PQgetvalue(result.get(), 0, field)); };
  Outcome out;
  out.reply = {.allowed = PQgetvalue(result.get(), 0, 0)[0] == 't',
               .remaining = number(1),
               .retry_ms = number(2),
               .reset_ms = number(3)};
  out.round_trips = 1;
  return out;
}

}  // namespace sluice::baselines
