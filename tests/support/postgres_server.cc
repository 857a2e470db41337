#include "postgres_server.h"

#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "redis_server.h"  // FreePort
#include "support/wait_until.h"

namespace sluice::testing {
namespace {

constexpr const char* kBin = "/usr/lib/postgresql/15/bin/";

// Who the server runs as: the `postgres` user when the tests run as root, else the tests' own.
struct ServerUser {
  bool switch_user = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

ServerUser UserForServer() {
  if (::geteuid() != 0) return {};
  const passwd* pw = ::getpwnam("postgres");
  if (pw == nullptr) {
    throw std::runtime_error("no postgres user: install Debian's postgresql package (bootstrap)");
  }
  return {true, pw->pw_uid, pw->pw_gid};
}

// Starts `argv` as the server's user, in a process group of its own (so that Pause reaches every
// process of the server), output appended to `log`, killed if this process dies.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& log, const ServerUser& user) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("cannot fork");
  if (pid == 0) {
    ::setpgid(0, 0);
    const int null = ::open("/dev/null", O_RDONLY);
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(null, STDIN_FILENO);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(out, STDERR_FILENO);
    if (user.switch_user &&
        (::setgroups(0, nullptr) != 0 || ::setgid(user.gid) != 0 || ::setuid(user.uid) != 0)) {
      ::_exit(126);
    }
    // After the change of user, which clears it.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

int WaitFor(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string Tail(const std::string& path) {
  std::ifstream file(path);
  std::string text((std::istreambuf_iterator<char>(file)), {});
  return text.size() > 4000 ? text.substr(text.size() - 4000) : text;
}

struct ConnDeleter {
  void operator()(PGconn* conn) const { PQfinish(conn); }
};
struct ResultDeleter {
  void operator()(PGresult* result) const { PQclear(result); }
};

}  // namespace

PostgresServer::PostgresServer(std::vector<std::string> settings)
    : settings_(std::move(settings)), port_(FreePort()) {
  char scratch[] = "/tmp/sluice-test-pg-XXXXXX";
  if (::mkdtemp(scratch) == nullptr) throw std::runtime_error("cannot make a scratch folder");
  dir_ = scratch;
  const ServerUser user = UserForServer();
  if (user.switch_user && ::chown(dir_.c_str(), user.uid, user.gid) != 0) {
    throw std::runtime_error("cannot give " + dir_ + " to the postgres user");
  }
  const int initdb = WaitFor(Spawn(
      {std::string(kBin) + "initdb", "-D", dir_ + "/data", "-U", "postgres", "--auth-local=trust",
       "--auth-host=scram-sha-256", "--no-sync", "-E", "UTF8", "--locale=C", "--no-instructions"},
      dir_ + "/initdb.log", user));
  if (initdb != 0) {
    throw std::runtime_error("initdb failed (" + std::to_string(initdb) +
                             "): " + Tail(dir_ + "/initdb.log"));
  }
  Start();
  Sql(std::string("CREATE ROLE ") + kUser + " LOGIN PASSWORD '" + kPassword + "'", "postgres");
  CreateDatabase(kDatabase);
}

PostgresServer::~PostgresServer() {
  Resume();
  Crash();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void PostgresServer::Start() {
  std::vector<std::string> argv = {std::string(kBin) + "postgres",
                                   "-D",
                                   dir_ + "/data",
                                   "-p",
                                   std::to_string(port_),
                                   "-k",
                                   dir_,
                                   "-c",
                                   "listen_addresses=127.0.0.1",
                                   "-c",
                                   "shared_buffers=32MB",
                                   "-c",
                                   "log_min_messages=warning"};
  for (const std::string& setting : settings_) {
    argv.push_back("-c");
    argv.push_back(setting);
  }
  pid_ = Spawn(argv, dir_ + "/server.log", UserForServer());
  const std::string ping = "host=" + dir_ + " port=" + std::to_string(port_) +
                           " user=postgres dbname=postgres connect_timeout=2";
  bool exited = false;
  const bool up = WaitUntil(
      [&] {
        int status = 0;
        exited = ::waitpid(pid_, &status, WNOHANG) == pid_;
        return exited || PQping(ping.c_str()) == PQPING_OK;
      },
      std::chrono::seconds(60));
  if (exited) {
    pid_ = -1;
    throw std::runtime_error("postgres exited at start: " + Tail(dir_ + "/server.log"));
  }
  if (!up) throw std::runtime_error("postgres did not start: " + Tail(dir_ + "/server.log"));
}

void PostgresServer::Crash() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGQUIT);
  int status = 0;
  if (!WaitUntil([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; })) {
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
  }
  pid_ = -1;
}

void PostgresServer::Pause() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGSTOP);  // first: it forks no more children
  paused_ = {pid_};
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    // "pid (comm) state ppid ...": the command may hold spaces, so read after its last ')'.
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state;
    pid_t parent = 0;
    rest >> state >> parent;
    if (parent != pid_) continue;
    const pid_t child = static_cast<pid_t>(std::stol(name));
    ::kill(child, SIGSTOP);
    paused_.push_back(child);
  }
}

void PostgresServer::Resume() {
  for (pid_t pid : paused_) ::kill(pid, SIGCONT);
  paused_.clear();
}

std::string PostgresServer::Url(const std::string& database) const {
  return std::string("postgresql://") + kUser + "@127.0.0.1:" + std::to_string(port_) + "/" +
         database;
}

PostgresOptions PostgresServer::Options(const std::string& database) const {
  PostgresOptions options;
  options.url = Url(database);
  options.password = kPassword;
  options.timeout = std::chrono::milliseconds(2000);
  options.connect_timeout = std::chrono::milliseconds(5000);
  return options;
}

std::string PostgresServer::Sql(const std::string& sql, const std::string& database) const {
  const std::string conninfo =
      "host=" + dir_ + " port=" + std::to_string(port_) + " user=postgres dbname=" + database;
  std::unique_ptr<PGconn, ConnDeleter> conn(PQconnectdb(conninfo.c_str()));
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    throw std::runtime_error("cannot connect as postgres: " +
                             std::string(PQerrorMessage(conn.get())));
  }
  std::unique_ptr<PGresult, ResultDeleter> result(PQexec(conn.get(), sql.c_str()));
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

void PostgresServer::CreateDatabase(const std::string& name) const {
  Sql("CREATE DATABASE " + name + " OWNER " + kUser, "postgres");
}

std::string PostgresServer::PasswordFile() const {
  const std::string path = dir_ + "/password";
  std::ofstream(path) << kPassword << "\n";
  return path;
}

std::string PostgresServer::QuotaStoreYaml(const std::string& database,
                                           const std::string& extra) const {
  return "quota_store: {type: postgres, url: '" + Url(database) +
         "', password_file: " + PasswordFile() + ", timeout: 1s" + extra + "}\n";
}

PostgresServer& SharedPostgres() {
  // Tests need not wait for fsync: a crash of the server (not of the machine) loses nothing that
  // was written, so the crash tests still see what a commit wrote.
  static PostgresServer server({"fsync=off"});
  return server;
}

}  // namespace sluice::testing
