#include "postgres_server.h"

#include <libpq-fe.h>
#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "redis_server.h"  // FreePort

namespace sluice::testing {
namespace {

constexpr const char* kBin = "/usr/lib/postgresql/15/bin/";
// Who runs the server's programs when the tests run as root.
constexpr const char* kServerUser = "postgres";

}  // namespace

PostgresServer::PostgresServer(std::vector<std::string> settings) : port_(FreePort()) {
  char scratch[] = "/tmp/sluice-test-pg-XXXXXX";
  if (::mkdtemp(scratch) == nullptr) throw std::runtime_error("cannot make a scratch folder");
  dir_ = scratch;
  if (::geteuid() == 0) {
    const passwd* account = ::getpwnam(kServerUser);
    if (account == nullptr || ::chown(scratch, account->pw_uid, account->pw_gid) != 0) {
      throw std::runtime_error("cannot give " + dir_ + " to the postgres user (bootstrap)");
    }
  }
  Process initdb(
      {std::string(kBin) + "initdb", "-D", dir_ + "/data", "-U", "postgres", "--auth-local=trust",
       "--auth-host=scram-sha-256", "--no-sync", "-E", "UTF8", "--locale=C"},
      dir_ + "/initdb.log", kServerUser);
  if (initdb.Wait(std::chrono::seconds(120)) != 0) throw std::runtime_error("initdb failed");

  std::vector<std::string> argv = {std::string(kBin) + "postgres", "-D", dir_ + "/data", "-p",
                                   std::to_string(port_),          "-k", dir_,           "-c",
                                   "listen_addresses=127.0.0.1"};
  for (const std::string& setting : settings) {
    argv.push_back("-c");
    argv.push_back(setting);
  }
  process_ = std::make_unique<Process>(argv, dir_ + "/server.log", kServerUser);
  const std::string ping = "host=" + dir_ + " port=" + std::to_string(port_) +
                           " user=postgres dbname=postgres connect_timeout=2";
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (PQping(ping.c_str()) != PQPING_OK) {
    if (std::chrono::steady_clock::now() > give_up || process_->Wait({}).has_value()) {
      throw std::runtime_error("postgres did not start: see " + dir_ + "/server.log");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Sql(std::string("CREATE ROLE ") + kUser + " LOGIN PASSWORD '" + kPassword + "'", "postgres");
  Sql(std::string("CREATE DATABASE ") + kDatabase + " OWNER " + kUser, "postgres");
}

PostgresServer::~PostgresServer() {
  // An immediate shutdown: the postmaster stops its backends, which a SIGKILL would leave behind.
  process_->Signal(SIGQUIT);
  process_->Wait(std::chrono::seconds(10));
  process_.reset();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string PostgresServer::Sql(const std::string& sql, const std::string& database) const {
  const std::string conninfo =
      "host=" + dir_ + " port=" + std::to_string(port_) + " user=postgres dbname=" + database;
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdb(conninfo.c_str()), &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    throw std::runtime_error("cannot connect as postgres: " +
                             std::string(PQerrorMessage(conn.get())));
  }
  std::unique_ptr<PGresult, decltype(&PQclear)> result(PQexec(conn.get(), sql.c_str()), &PQclear);
  const ExecStatusType status = PQresultStatus(result.get());
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    throw std::runtime_error("SQL failed: " + sql + ": " + PQerrorMessage(conn.get()));
  }
  std::string rows;
  for (int row = 0; row < PQntuples(result.get()); ++row) {
    if (row > 0) rows += '\n';
    rows += PQgetvalue(result.get(), row, 0);
  }
  return rows;
}

}  // namespace sluice::testing
