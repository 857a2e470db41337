// The token bucket script against the ways the design document sets aside (bench/baselines.h):
// N clients, each a thread with a blocking connection of its own, share `requests` checks of one
// method on one hot key or on many keys, then the next method on fresh keys. For each method it
// prints what was admitted against what a correct limiter allows, checks per second, and round
// trips per check. bench/baselines_bench runs it in rounds on a pinned redis-server.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <latch>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "baselines.h"

namespace sluice::baselines {
namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string host = "127.0.0.1";
  uint16_t port = 6379;
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
};

Totals RunMethod(Method method, const Args& args, const std::string& prefix) {
  Options options;
  options.fewest_round_trips = args.fewest_round_trips;
  options.lock_ttl_ms = args.lock_ttl_ms;
  options.max_watch_retries = args.max_watch_retries;
  std::vector<std::unique_ptr<Client>> clients;
  for (int c = 0; c < args.clients; ++c)
    clients.push_back(std::make_unique<Client>(args.host, args.port, options));

  const Limit limit{args.capacity, args.capacity, args.period_ms};
  std::atomic<int64_t> next{0};
  std::latch start(args.clients + 1);
  std::mutex mutex;
  Totals totals;
  std::vector<int64_t> sent(static_cast<size_t>(args.keys), 0);
  std::exception_ptr failure;

  std::vector<std::thread> threads;
  for (int c = 0; c < args.clients; ++c) {
    threads.emplace_back([&, c] {
      Client& client = *clients[static_cast<size_t>(c)];
      std::mt19937_64 rng(static_cast<uint64_t>(c) * 7919 + 1);
      std::uniform_int_distribution<int> pick(0, args.keys - 1);
      std::vector<int64_t> mine(sent.size(), 0);
      Totals local;
      start.arrive_and_wait();
      try {
        while (next.fetch_add(1) < args.requests) {
          const int k = pick(rng);
          const Outcome out = client.Check(method, prefix + std::to_string(k), limit);
          ++mine[static_cast<size_t>(k)];
          ++local.checks;
          local.admitted += out.allowed ? 1 : 0;
          local.round_trips += out.round_trips;
          local.retries += out.retries;
          local.aborted += out.aborted ? 1 : 0;
          local.lost_locks += out.lost_lock ? 1 : 0;
        }
      } catch (...) {
        std::lock_guard lock(mutex);
        failure = std::current_exception();
        next = args.requests;  // stop the others too
      }
      std::lock_guard lock(mutex);
      for (size_t k = 0; k < sent.size(); ++k) sent[k] += mine[k];
      totals.checks += local.checks;
      totals.admitted += local.admitted;
      totals.round_trips += local.round_trips;
      totals.retries += local.retries;
      totals.aborted += local.aborted;
      totals.lost_locks += local.lost_locks;
    });
  }
  start.arrive_and_wait();
  const auto begin = Clock::now();
  for (std::thread& t : threads) t.join();
  totals.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  if (failure) std::rethrow_exception(failure);

  // Refill during the run, at most: tokens / period for every ms of it, whole tokens only.
  const auto refill =
      static_cast<int64_t>(totals.seconds * 1000 * static_cast<double>(limit.tokens) /
                           static_cast<double>(limit.period_ms));
  for (int64_t n : sent) totals.allowed += std::min(n, limit.capacity + refill);
  return totals;
}

void Print(const Args& args, const std::vector<std::pair<Method, Totals>>& results) {
  if (args.json) {
    for (const auto& [method, t] : results) {
      const auto checks = static_cast<double>(std::max<int64_t>(1, t.checks));
      fmt::print(
          "{{\"method\": \"{}\", \"keys\": {}, \"clients\": {}, \"checks\": {}, "
          "\"admitted\": {}, \"allowed\": {}, \"checks_per_s\": {:.0f}, "
          "\"round_trips_per_check\": {:.3f}, \"retries_per_check\": {:.3f}, \"aborted\": {}, "
          "\"lost_locks\": {}}}\n",
          MethodName(method), args.keys, args.clients, t.checks, t.admitted, t.allowed,
          static_cast<double>(t.checks) / t.seconds, static_cast<double>(t.round_trips) / checks,
          static_cast<double>(t.retries) / checks, t.aborted, t.lost_locks);
    }
    return;
  }
  fmt::print("{} clients, {} key(s), capacity {} per key, {} checks per method{}\n\n", args.clients,
             args.keys, args.capacity, args.requests,
             args.fewest_round_trips ? ", reads and release pipelined" : "");
  fmt::print(
      "| method | admitted | allowed | checks/s | round trips/check | retries/check | "
      "aborted | lost locks |\n|---|---|---|---|---|---|---|---|\n");
  for (const auto& [method, t] : results) {
    const auto checks = static_cast<double>(std::max<int64_t>(1, t.checks));
    fmt::print("| {} | {} | {} | {:.0f} | {:.2f} | {:.2f} | {} | {} |\n", MethodName(method),
               t.admitted, t.allowed, static_cast<double>(t.checks) / t.seconds,
               static_cast<double>(t.round_trips) / checks, static_cast<double>(t.retries) / checks,
               t.aborted, t.lost_locks);
  }
}

int Run(const Args& args) {
  std::random_device device;
  const std::string run = fmt::format("{:08x}", device());
  std::vector<std::pair<Method, Totals>> results;
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
  sluice::baselines::Args args;
  CLI::App app{"The token bucket script against separate commands, WATCH/MULTI/EXEC and a lock"};
  app.add_option("--host", args.host);
  app.add_option("--port", args.port, "a running redis-server");
  app.add_option("--clients", args.clients, "threads, each with its own connection")
      ->check(CLI::Range(1, 10'000));
  app.add_option("--keys", args.keys, "1: one hot key; more: each check picks one at random")
      ->check(CLI::Range(1, 10'000'000));
  app.add_option("--capacity", args.capacity, "tokens per bucket (and refilled per period)")
      ->check(CLI::Range(int64_t{1}, int64_t{1'000'000'000}));
  app.add_option("--period-ms", args.period_ms)->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--requests", args.requests, "checks per method, shared by the clients")
      ->check(CLI::Range(int64_t{1}, int64_t{1'000'000'000}));
  app.add_option("--methods", args.methods)
      ->check(CLI::IsMember({"separate", "watch", "lock", "script"}));
  app.add_flag("--fewest-round-trips", args.fewest_round_trips,
               "pipeline TIME with the read and the lock's release with the write");
  app.add_option("--lock-ttl-ms", args.lock_ttl_ms)->check(CLI::Range(int64_t{1}, int64_t{60'000}));
  app.add_option("--max-watch-retries", args.max_watch_retries)->check(CLI::Range(0, 1'000'000));
  app.add_flag("--json", args.json, "one line of JSON per method");
  CLI11_PARSE(app, argc, argv);
  try {
    return sluice::baselines::Run(args);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
}
