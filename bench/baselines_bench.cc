// The token bucket script against the ways the design (docs/design.md) sets aside
// (bench/baselines.h, postgres_baseline.h, memcached_baseline.h): N clients, each a thread with a
// blocking connection of its own, share `requests` checks of one method on one hot key or on many
// keys, then the next method on fresh keys. For each method it prints what was admitted against
// what a correct limiter allows, checks per second, the latency of a check, and round trips and
// retries per check. bench/baselines_bench runs it in rounds on pinned servers.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <latch>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "method_client.h"
#include "sluice/postgres_options.h"
#include "sluice/postgres_quota_store.h"

namespace sluice::baselines {
namespace {

using Clock = std::chrono::steady_clock;

// Redis on its usual port; no PostgreSQL or memcached unless given.
Servers DefaultServers() {
  Servers servers;
  servers.redis_port = 6379;
  return servers;
}

struct Args {
  Servers servers = DefaultServers();
  int clients = 50;
  int keys = 1;
  int64_t capacity = 100;
  int64_t period_ms = 3'600'000;  // refills `capacity` tokens an hour: next to nothing in a run
  int64_t requests = 5000;        // per method, shared by the clients
  std::vector<std::string> methods = {"separate", "watch", "lock", "script"};
  bool fewest_round_trips = false;
  int64_t lock_ttl_ms = 100;
  int max_watch_retries = 100;
  bool json = false;
  // Each server's process (PostgreSQL's postmaster), whose CPU time a check costs; 0: not
  // measured.
  std::map<Server, pid_t> server_pids;
  std::string postgres_url;  // the same PostgreSQL as a URI, for postgres-quota-store
};

struct Totals {
  int64_t checks = 0;
  int64_t admitted = 0;
  int64_t allowed = 0;  // the most a correct limiter admits: capacity and refill, per key
  int64_t round_trips = 0;
  int64_t retries = 0;
  int64_t aborted = 0;
  int64_t lost_locks = 0;
  double seconds = 0;
  int64_t wal_syncs = 0;    // PostgreSQL's, during the run
  double server_cpu_s = 0;  // user and system time of the server's processes, during the run
  std::vector<double> latencies_us;  // of every check, sorted once the run is over
};

// The latency below which `fraction` of the checks were answered, in ms.
double PercentileMs(const std::vector<double>& sorted_us, double fraction) {
  if (sorted_us.empty()) return 0;
  const auto at = static_cast<size_t>(fraction * static_cast<double>(sorted_us.size() - 1));
  return sorted_us[at] / 1000;
}

// The time on a CPU of process `pid` and of its children (as a postmaster's backends), from each
// thread's /proc/PID/task/TID/schedstat, in ns and so exact where /proc/PID/stat's clock ticks
// are not. A child that has ended no longer counts. 0 for no pid.
double ProcessTreeCpuSeconds(pid_t pid) {
  if (pid <= 0) return 0;
  const auto threads_ns = [](const std::filesystem::path& process) {
    int64_t ns = 0;
    std::error_code error;
    for (const auto& task : std::filesystem::directory_iterator(process / "task", error)) {
      int64_t on_cpu = 0;
      if (std::ifstream(task.path() / "schedstat") >> on_cpu) ns += on_cpu;
    }
    return ns;
  };
  // "pid (comm) state ppid ...": the command may hold spaces and parentheses.
  const auto parent_of = [](const std::filesystem::path& process) -> pid_t {
    std::ifstream file(process / "stat");
    std::string line;
    if (!std::getline(file, line) || line.rfind(')') == std::string::npos) return 0;
    std::istringstream fields(line.substr(line.rfind(')') + 1));
    std::string state;
    pid_t parent = 0;
    fields >> state >> parent;
    return parent;
  };
  int64_t ns = threads_ns(fmt::format("/proc/{}", pid));
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (parent_of(entry.path()) == pid) ns += threads_ns(entry.path());
  }
  return static_cast<double>(ns) / 1e9;
}

int64_t WallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Sluice's quota store at `url` as a gateway opens it (its pool and batching as shipped), once it
// can take checks.
std::shared_ptr<QuotaStore> OpenQuotaStore(const std::string& url) {
  PostgresOptions options;
  options.url = url;
  options.timeout = std::chrono::seconds(10);  // a benchmark's queue, not a gateway's deadline
  auto store = std::make_shared<PostgresQuotaStore>(options);
  if (Status ready = store->WaitReady(std::chrono::seconds(10)); !ready.ok())
    throw std::runtime_error("quota store: " + ready.ToString());
  return store;
}

// Adds `part`'s counts and latencies to `totals`.
void Add(Totals& totals, const Totals& part) {
  totals.checks += part.checks;
  totals.admitted += part.admitted;
  totals.round_trips += part.round_trips;
  totals.retries += part.retries;
  totals.aborted += part.aborted;
  totals.lost_locks += part.lost_locks;
  totals.latencies_us.insert(totals.latencies_us.end(), part.latencies_us.begin(),
                             part.latencies_us.end());
}

// What one client of a run checks: random keys of `prefix`, each bucket `limit`.
struct ClientRun {
  const Args& args;
  const std::string& prefix;
  const Limit& limit;
  int client;  // seeds its keys
};

// Checks on `client` until `next` reaches the run's requests, counting into `local` and, per key,
// into `mine`.
void CheckUntilDone(MethodClient& client, const ClientRun& run, std::atomic<int64_t>& next,
                    Totals& local, std::vector<int64_t>& mine) {
  std::mt19937_64 rng(static_cast<uint64_t>(run.client) * 7919 + 1);
  std::uniform_int_distribution<int> pick(0, run.args.keys - 1);
  while (next.fetch_add(1) < run.args.requests) {
    const int k = pick(rng);
    const auto asked = Clock::now();
    const Outcome out = client.Check(run.prefix + std::to_string(k), run.limit);
    local.latencies_us.push_back(
        std::chrono::duration<double, std::micro>(Clock::now() - asked).count());
    ++mine[static_cast<size_t>(k)];
    ++local.checks;
    local.admitted += out.reply.allowed ? 1 : 0;
    local.round_trips += out.round_trips;
    local.retries += out.retries;
    local.aborted += out.aborted ? 1 : 0;
    local.lost_locks += out.lost_lock ? 1 : 0;
  }
}

Totals RunMethod(Method method, const Args& args, const std::string& prefix) {
  Options options;
  options.fewest_round_trips = args.fewest_round_trips;
  options.lock_ttl_ms = args.lock_ttl_ms;
  options.max_watch_retries = args.max_watch_retries;
  MemcachedOptions memcached;
  memcached.max_cas_retries = args.max_watch_retries;
  const bool postgres = ServerOf(method) == Server::kPostgres;
  const int64_t wal_syncs_before =
      postgres ? PostgresClient::WalSyncs(args.servers.postgres_conninfo) : 0;
  // The quota store's connections live as long as the method's run: the WAL syncs are counted
  // once every client has disconnected.
  Servers servers = args.servers;
  if (method == Method::kPostgresQuotaStore) {
    if (args.postgres_url.empty())
      throw std::runtime_error("postgres-quota-store needs --postgres-url");
    servers.quota_store = OpenQuotaStore(args.postgres_url);
  }
  std::vector<std::unique_ptr<MethodClient>> clients;
  clients.reserve(static_cast<size_t>(args.clients));
  for (int c = 0; c < args.clients; ++c)
    clients.push_back(std::make_unique<MethodClient>(method, servers, options, memcached));

  const auto server_pid = args.server_pids.find(ServerOf(method));
  const pid_t measured = server_pid == args.server_pids.end() ? 0 : server_pid->second;

  const Limit limit{args.capacity, args.capacity, args.period_ms};
  std::atomic<int64_t> next{0};
  std::latch start(args.clients + 1);
  std::mutex mutex;
  Totals totals;
  std::vector<int64_t> sent(static_cast<size_t>(args.keys), 0);
  std::exception_ptr failure;

  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(args.clients));
  for (int c = 0; c < args.clients; ++c) {
    threads.emplace_back([&, c] {
      std::vector<int64_t> mine(sent.size(), 0);
      Totals local;
      start.arrive_and_wait();
      try {
        CheckUntilDone(*clients[static_cast<size_t>(c)], {args, prefix, limit, c}, next, local,
                       mine);
      } catch (...) {
        std::lock_guard lock(mutex);
        failure = std::current_exception();
        next = args.requests;  // stop the others too
      }
      std::lock_guard lock(mutex);
      for (size_t k = 0; k < sent.size(); ++k) sent[k] += mine[k];
      Add(totals, local);
    });
  }
  // The server's CPU time once every client is connected, until before they disconnect: the
  // checks' cost, not the connections'.
  const double cpu_before = ProcessTreeCpuSeconds(measured);
  start.arrive_and_wait();
  const auto begin = Clock::now();
  const int64_t first_ms = WallClockMs();
  for (std::thread& t : threads) t.join();
  totals.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  const int64_t last_ms = WallClockMs();
  totals.server_cpu_s = ProcessTreeCpuSeconds(measured) - cpu_before;
  if (failure) std::rethrow_exception(failure);
  std::sort(totals.latencies_us.begin(), totals.latencies_us.end());
  clients.clear();
  servers.quota_store.reset();
  if (postgres) {
    totals.wal_syncs = PostgresClient::WalSyncs(args.servers.postgres_conninfo) - wal_syncs_before;
  }

  // A bucket: its capacity and the refill during the run, at most (tokens / period for every ms
  // of it, whole tokens only). A fixed window: its capacity in every window the run touched.
  const int64_t most =
      IsFixedWindow(method)
          ? limit.capacity * (last_ms / limit.period_ms - first_ms / limit.period_ms + 1)
          : limit.capacity +
                static_cast<int64_t>(totals.seconds * 1000 * static_cast<double>(limit.tokens) /
                                     static_cast<double>(limit.period_ms));
  for (int64_t n : sent) totals.allowed += std::min(n, most);
  return totals;
}

void Print(const Args& args, const std::vector<std::pair<Method, Totals>>& results) {
  if (args.json) {
    for (const auto& [method, t] : results) {
      const auto checks = static_cast<double>(std::max<int64_t>(1, t.checks));
      fmt::print(
          "{{\"method\": \"{}\", \"keys\": {}, \"clients\": {}, \"checks\": {}, "
          "\"admitted\": {}, \"allowed\": {}, \"checks_per_s\": {:.0f}, \"p50_ms\": {:.3f}, "
          "\"p99_ms\": {:.3f}, \"round_trips_per_check\": {:.3f}, \"retries_per_check\": {:.3f}, "
          "\"aborted\": {}, \"lost_locks\": {}, \"wal_syncs_per_check\": {:.3f}, "
          "\"server_cpu_us_per_check\": {:.1f}}}\n",
          MethodName(method), args.keys, args.clients, t.checks, t.admitted, t.allowed,
          static_cast<double>(t.checks) / t.seconds, PercentileMs(t.latencies_us, 0.5),
          PercentileMs(t.latencies_us, 0.99), static_cast<double>(t.round_trips) / checks,
          static_cast<double>(t.retries) / checks, t.aborted, t.lost_locks,
          static_cast<double>(t.wal_syncs) / checks, t.server_cpu_s * 1e6 / checks);
    }
    return;
  }
  fmt::print("{} clients, {} key(s), capacity {} per key, {} checks per method{}\n\n", args.clients,
             args.keys, args.capacity, args.requests,
             args.fewest_round_trips ? ", reads and release pipelined" : "");
  fmt::print(
      "| method | admitted | allowed | checks/s | p50 ms | p99 ms | round trips/check | "
      "retries/check | aborted | lost locks | WAL syncs/check | server CPU us/check |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& [method, t] : results) {
    const auto checks = static_cast<double>(std::max<int64_t>(1, t.checks));
    fmt::print(
        "| {} | {} | {} | {:.0f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {} | {} | {:.3f} | {:.1f} "
        "|\n",
        MethodName(method), t.admitted, t.allowed, static_cast<double>(t.checks) / t.seconds,
        PercentileMs(t.latencies_us, 0.5), PercentileMs(t.latencies_us, 0.99),
        static_cast<double>(t.round_trips) / checks, static_cast<double>(t.retries) / checks,
        t.aborted, t.lost_locks, static_cast<double>(t.wal_syncs) / checks,
        t.server_cpu_s * 1e6 / checks);
  }
}

int Run(const Args& args) {
  std::random_device device;
  const std::string run = fmt::format("{:08x}", device());
  std::vector<std::pair<Method, Totals>> results;
  if (!args.servers.postgres_conninfo.empty())
    PostgresClient::CreateTable(args.servers.postgres_conninfo);
  for (const std::string& name : args.methods) {
    const Method method = *ParseMethod(name);
    // Fresh keys for every method and run: each starts on full buckets.
    const std::string prefix = fmt::format("bl:{}:{}:", run, name);
    results.emplace_back(method, RunMethod(method, args, prefix));
  }
  Print(args, results);
  return 0;
}

}  // namespace
}  // namespace sluice::baselines

int main(int argc, char** argv) {
  try {
    sluice::baselines::Args args;
    CLI::App app{
        "The token bucket script against separate commands, WATCH/MULTI/EXEC, a lock, SQL on "
        "PostgreSQL and Memcached"};
    app.add_option("--host", args.servers.host, "of redis-server and memcached");
    app.add_option("--port", args.servers.redis_port, "a running redis-server");
    app.add_option("--postgres", args.servers.postgres_conninfo,
                   "libpq's connection string of a running PostgreSQL, for postgres-*");
    app.add_option("--postgres-url", args.postgres_url,
                   "the same PostgreSQL as a postgresql:// URI, for postgres-quota-store");
    app.add_option("--memcached-port", args.servers.memcached_port,
                   "a running memcached on --host, for memcached-*");
    app.add_option("--redis-pid", args.server_pids[sluice::baselines::Server::kRedis],
                   "redis-server's process, to count its CPU time per check");
    app.add_option("--postgres-pid", args.server_pids[sluice::baselines::Server::kPostgres],
                   "the postmaster's process, to count its and its backends' CPU time per check");
    app.add_option("--memcached-pid", args.server_pids[sluice::baselines::Server::kMemcached],
                   "memcached's process, to count its CPU time per check");
    app.add_option("--clients", args.clients, "threads, each with its own connection")
        ->check(CLI::Range(1, 10'000));
    app.add_option("--keys", args.keys, "1: one hot key; more: each check picks one at random")
        ->check(CLI::Range(1, 10'000'000));
    app.add_option("--capacity", args.capacity, "tokens per bucket (and refilled per period)")
        ->check(CLI::Range(int64_t{1}, int64_t{1'000'000'000}));
    app.add_option("--period-ms", args.period_ms)->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
    app.add_option("--requests", args.requests, "checks per method, shared by the clients")
        ->check(CLI::Range(int64_t{1}, int64_t{1'000'000'000}));
    std::vector<std::string> method_names;
    for (const sluice::baselines::Method method : sluice::baselines::kAllMethods)
      method_names.emplace_back(sluice::baselines::MethodName(method));
    app.add_option("--methods", args.methods)->check(CLI::IsMember(method_names));
    app.add_flag("--fewest-round-trips", args.fewest_round_trips,
                 "pipeline TIME with the read and the lock's release with the write");
    app.add_option("--lock-ttl-ms", args.lock_ttl_ms)
        ->check(CLI::Range(int64_t{1}, int64_t{60'000}));
    app.add_option(
           "--max-watch-retries", args.max_watch_retries,
           "WATCH's nil EXECs, and memcached-cas's failed writes, before a check is given up")
        ->check(CLI::Range(0, 1'000'000));
    app.add_flag("--json", args.json, "one line of JSON per method");
    CLI11_PARSE(app, argc, argv);
    return sluice::baselines::Run(args);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
}
