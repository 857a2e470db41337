// A real PostgreSQL server for tests: a scratch cluster made by initdb in a folder of /tmp, run on
// a free loopback port as the `postgres` user when the tests run as root (PostgreSQL refuses to run
// as root), stopped and removed when the object goes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/postgres_options.h"

namespace sluice::testing {

class PostgresServer {
 public:
  // The role the quota store connects as, its password (scram-sha-256 over TCP) and database.
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

  // postgresql://sluice@127.0.0.1:PORT/DATABASE, without the password.
  std::string Url(const std::string& database = kDatabase) const;
  // Options for a quota store on `database` as kUser, with the password, short timeouts.
  PostgresOptions Options(const std::string& database = kDatabase) const;

  // Starts the server (again) on the same port and folder, and waits until it takes connections;
  // after Crash, that is crash recovery.
  void Start();
  // Stops the server as `pg_ctl stop -m immediate` does (SIGQUIT to the postmaster): no
  // checkpoint, what is not in the WAL on disk is gone, as in a crash. Waits until it is gone.
  void Crash();
  // Stops (SIGSTOP) and resumes (SIGCONT) every process of the server, the postmaster and its
  // children (each backend is a process group of its own): a server that hangs.
  void Pause();
  void Resume();
  bool running() const { return pid_ > 0; }

  // Runs `sql` as the superuser over the Unix socket, and returns the first column of each row,
  // one a line; fails the test on an error.
  std::string Sql(const std::string& sql, const std::string& database = kDatabase) const;
  // Makes a database owned by kUser.
  void CreateDatabase(const std::string& name) const;

  // A file that holds kPassword, as a deployment keeps it (a line of its own).
  std::string PasswordFile() const;
  // The `quota_store:` line of a configuration for `database`, its password in PasswordFile(),
  // with `extra` fields (", failure: open") after the others.
  std::string QuotaStoreYaml(const std::string& database = kDatabase,
                             const std::string& extra = "") const;

 private:
  std::vector<std::string> settings_;
  std::string dir_;
  uint16_t port_;
  pid_t pid_ = -1;
  std::vector<pid_t> paused_;
};

// The server the tests of one binary share, made at first use: initdb once per binary, not once
// per test. Tests keep apart by the names of their rules (or databases of their own).
PostgresServer& SharedPostgres();

}  // namespace sluice::testing
