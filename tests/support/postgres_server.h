// A real PostgreSQL server for tests: a scratch cluster made by initdb in a folder of /tmp, run on
// a free loopback port as the `postgres` user when the tests run as root (PostgreSQL refuses to run
// as root), stopped and removed when the object goes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "process.h"

namespace sluice::testing {

class PostgresServer {
 public:
  // The role that clients connect as, its password (scram-sha-256 over TCP) and database.
  static constexpr const char* kUser = "sluice";
  static constexpr const char* kPassword = "sluice-test-password";
  static constexpr const char* kDatabase = "sluice";

  // initdb, then starts the server with `settings` ("fsync=off") beside the defaults, and makes
  // the role and its database. The binaries are Debian's (/usr/lib/postgresql/15/bin).
  explicit PostgresServer(std::vector<std::string> settings = {});
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  uint16_t port() const { return port_; }
  const std::string& data_dir() const { return dir_; }

  // Runs `sql` as the superuser over the Unix socket, and returns the first column of each row,
  // one a line; throws on an error.
  std::string Sql(const std::string& sql, const std::string& database = kDatabase) const;

 private:
  std::string dir_;
  uint16_t port_;
  std::unique_ptr<Process> process_;
};

}  // namespace sluice::testing
