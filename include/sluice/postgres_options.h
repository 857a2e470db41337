// Where a PostgreSQL quota store connects, and how.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "sluice/clock.h"
#include "sluice/status.h"

namespace sluice {

struct PostgresOptions {
  // libpq's connection URI: postgresql://[user[:password]@]host[:port][/dbname][?param=value&...]
  // (sslmode, sslrootcert and the rest of libpq's parameters go in the query).
  std::string url;
  std::string password;       // when the URL has none (libpq also reads ~/.pgpass, PGPASSWORD)
  std::string password_file;  // the password is this file's content, one trailing newline dropped
  std::chrono::milliseconds timeout{200};           // a check's, from its submission to its commit
  std::chrono::milliseconds connect_timeout{1000};  // to connect, authenticate and find the table
  size_t pool = 4;                  // connections; each carries one statement (a batch) at a time
  size_t max_batch_ops = 1024;      // ops in one statement at most
  size_t max_queued_ops = 100'000;  // ops waiting for a connection; more are refused at once
  size_t spent_quotas = 100'000;    // quotas remembered as spent, at most (SpentQuotas)
  // How often ended windows are deleted (by one gateway at a time), and how many rows a
  // statement deletes.
  std::chrono::milliseconds cleanup_interval{60'000};
  size_t cleanup_batch = 1000;
  // What the timeouts, waits and the spent-quota memory are measured on; null: the process's
  // steady clock.
  std::shared_ptr<const Clock> clock;

  // "postgres 127.0.0.1:5432/sluice": where it connects, for logs and metrics; never a
  // credential.
  std::string Describe() const;

  bool operator==(const PostgresOptions&) const = default;
};

// The password `options` names: `password`, or `password_file`'s content; empty for none (the URL,
// ~/.pgpass or PGPASSWORD may hold one). The message of an error names the file, never a secret.
Result<std::string> PostgresPassword(const PostgresOptions& options);

// What a connection URI names, as libpq reads it (defaults filled in: localhost, 5432).
struct PostgresUrl {
  std::string host;
  std::string port;
  std::string dbname;
  std::string user;
  bool has_password = false;
};

// Reads a postgresql:// (or postgres://) URI as libpq does. The message of an error never quotes
// the URL, which may hold a password.
Result<PostgresUrl> ParsePostgresUrl(std::string_view url);

}  // namespace sluice
