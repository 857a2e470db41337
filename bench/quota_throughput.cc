// Durable quota checks against a PostgreSQL quota store: N checks kept in flight over K keys (a
// monthly quota each, never spent, cost 1) for a few seconds, after a second of warm-up. Prints
// one JSON line: checks per second, latency percentiles, statements (commits) per second and
// checks per statement. With --batch 1 every statement carries one check: one durable write per
// check, the baseline group commit is measured against. bench/quota_bench runs it.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "sluice/postgres_quota_store.h"

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string url;
  std::string password;
  int in_flight = 16;
  int keys = 10'000;
  double seconds = 5;
  size_t pool = 4;
  size_t batch = 1024;
  std::string bucket = "bench";
};

// Keeps `in_flight` checks going: each answer sends the next. Latencies are recorded once
// `measuring` is set, until `stop`.
class Load {
 public:
  Load(PostgresQuotaStore& store, const Args& args)
      : store_(store), args_(args), random_(std::random_device{}()) {}

  void Start() {
    for (int i = 0; i < args_.in_flight; ++i) Send();
  }
  void Measure() { measuring_ = true; }
  // Stops sending and waits for what is in flight.
  void Stop() {
    stop_ = true;
    std::unique_lock lock(mutex_);
    drained_.wait(lock, [this] { return in_flight_ == 0; });
  }

  std::vector<int64_t> latencies_us() const { return latencies_us_; }
  int64_t errors() const { return errors_; }

 private:
  void Send() {
    std::string value;
    {
      std::lock_guard lock(mutex_);
      ++in_flight_;
      value =
          "org_" + std::to_string(std::uniform_int_distribution<int>(0, args_.keys - 1)(random_));
    }
    const auto sent = Clock::now();
    store_.Take(
        {{args_.bucket, std::move(value), 1'000'000'000'000, 1, {CalendarPeriod::kMonth, 0}, true}},
        [this, sent](Result<std::vector<QuotaReply>> replies) {
          const auto took = Clock::now() - sent;
          {
            std::lock_guard lock(mutex_);
            --in_flight_;
            if (measuring_ && !stop_) {
              latencies_us_.push_back(
                  std::chrono::duration_cast<std::chrono::microseconds>(took).count());
              if (!replies.ok() || !(*replies)[0].charged) ++errors_;
            }
          }
          if (!stop_) return Send();
          drained_.notify_all();
        });
  }

  PostgresQuotaStore& store_;
  const Args& args_;
  std::mutex mutex_;
  std::condition_variable drained_;
  std::minstd_rand random_;
  int in_flight_ = 0;
  std::atomic<bool> measuring_{false};
  std::atomic<bool> stop_{false};
  std::vector<int64_t> latencies_us_;
  int64_t errors_ = 0;
};

double Percentile(std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t at =
      std::min(sorted.size() - 1, static_cast<size_t>(p * static_cast<double>(sorted.size())));
  return static_cast<double>(sorted[at]) / 1000.0;
}

int Run(const Args& args) {
  PostgresOptions options;
  options.url = args.url;
  options.password = args.password;
  options.pool = args.pool;
  options.max_batch_ops = args.batch;
  options.timeout = std::chrono::seconds(10);
  options.max_queued_ops = 1'000'000;
  PostgresQuotaStore store(options);
  if (Status ready = store.WaitReady(std::chrono::seconds(10)); !ready.ok()) {
    fmt::print(stderr, "{}\n", ready.ToString());
    return 1;
  }
  Load load(store, args);
  load.Start();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const PostgresQuotaStats before = store.Stats();
  load.Measure();
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(args.seconds));
  const PostgresQuotaStats after = store.Stats();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  load.Stop();
  std::vector<int64_t> latencies = load.latencies_us();
  std::sort(latencies.begin(), latencies.end());
  const auto statements = static_cast<double>(after.statements - before.statements);
  const auto checks = static_cast<double>(after.checks - before.checks);
  fmt::print(
      "{{\"in_flight\": {}, \"batch\": {}, \"pool\": {}, \"checks_per_s\": {:.0f}, "
      "\"p50_ms\": {:.2f}, \"p99_ms\": {:.2f}, \"statements_per_s\": {:.0f}, "
      "\"checks_per_statement\": {:.1f}, \"errors\": {}}}\n",
      args.in_flight, args.batch, args.pool, static_cast<double>(latencies.size()) / elapsed,
      Percentile(latencies, 0.5), Percentile(latencies, 0.99), statements / elapsed,
      statements > 0 ? checks / statements : 0.0, load.errors());
  return 0;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  try {
    sluice::Args args;
    CLI::App app{"Durable quota checks per second against a PostgreSQL quota store"};
    app.add_option("--url", args.url, "postgresql://user@host:port/dbname")->required();
    app.add_option("--password", args.password, "the role's password");
    app.add_option("--in-flight", args.in_flight, "checks kept in flight")->capture_default_str();
    app.add_option("--keys", args.keys, "distinct quotas checked, at random")
        ->capture_default_str();
    app.add_option("--seconds", args.seconds, "measured seconds")->capture_default_str();
    app.add_option("--pool", args.pool, "connections")->capture_default_str();
    app.add_option("--batch", args.batch, "most checks (ops) in one statement; 1: no group commit")
        ->capture_default_str();
    app.add_option("--bucket", args.bucket, "the quotas' bucket name")->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    return sluice::Run(args);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
}
