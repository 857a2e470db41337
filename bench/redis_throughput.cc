// Drives a Limiter on a RedisStore (or a ClusterStore) as hard as it will go, or one check at a
// time, and prints what it measured as one line of JSON. bench/redis_bench runs it beside
// redis-benchmark; bench/cluster_bench against clusters of one, two and three primaries.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "sluice/cluster_store.h"
#include "sluice/limiter.h"
#include "sluice/redis_store.h"

namespace sluice {

constexpr int kMostRules = 10;  // --rules: at most this many rules a request

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  uint16_t port = 6379;
  int rules = 1;
  int in_flight = 512;  // 0: one check at a time, timing each
  double seconds = 5;
  int keys = 100'000;
  std::string mode = "evalsha";
  std::string layout = "hash";
  // Every rule's limit. By default buckets far too big to run dry, full again 1 ms after a
  // check (the key gone): the benchmark measures checks, not rejections.
  std::vector<int64_t> limit = {1'000'000'000, 1'000'000'000, 60'000};
  bool cluster = false;   // --port is a seed of a Redis Cluster
  int wait_replicas = 0;  // each check followed by WAIT for this many replicas (100 ms at most)
  std::string transport = "tcp";  // tcp, tls (on --tls-port, trusting --tls-ca) or unix
  uint16_t tls_port = 0;
  std::string tls_ca;
  std::string unix_path;
  bool compare_transports = false;  // one check at a time over each transport in turn
};

std::unique_ptr<Limiter> MakeLimiter(int rule_count, std::shared_ptr<Store> store,
                                     const Args& args) {
  const Limit limit{args.limit[0], args.limit[1], args.limit[2]};
  std::vector<Rule> rules = {{"per-ip", "ip", "", limit, 1},
                             {"per-key", "key", "", limit, 1},
                             {"per-tenant", "tenant", "", limit, 1}};
  for (int i = 3; i < kMostRules; ++i) {
    rules.push_back({fmt::format("per-a{}", i), fmt::format("a{}", i), "", limit, 1});
  }
  rules.resize(static_cast<size_t>(rule_count));
  for (Rule& rule : rules) rule.wait = {args.wait_replicas, args.wait_replicas > 0 ? 100 : 0};
  auto limiter = Limiter::Create(rules, {}, std::move(store));
  if (!limiter.ok()) throw std::runtime_error(limiter.status().ToString());
  return std::move(limiter).value();
}

Request RequestFor(uint64_t n, int keys) {
  const std::string id = std::to_string(n % static_cast<uint64_t>(keys));
  Request request = {{"ip", "10.0." + id}, {"key", "ak_" + id}, {"tenant", "org_" + id}};
  for (int i = 3; i < kMostRules; ++i) request.Set(fmt::format("a{}", i), id);
  return request;
}

// Keeps `in_flight` checks outstanding for the duration; each completion starts the next.
class Saturator {
 public:
  Saturator(const Limiter& limiter, const Args& args) : limiter_(limiter), args_(args) {}

  uint64_t Done() const { return done_; }

  // The 99th percentile of the checks' latencies (submitted to decided), in µs.
  double P99Us() {
    std::lock_guard lock(mutex_);
    if (latencies_us_.empty()) return 0;
    const size_t at = latencies_us_.size() * 99 / 100;
    std::nth_element(latencies_us_.begin(), latencies_us_.begin() + static_cast<std::ptrdiff_t>(at),
                     latencies_us_.end());
    return latencies_us_[at];
  }

  double Run() {
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(args_.seconds));
    const auto start = Clock::now();
    for (int i = 0; i < args_.in_flight; ++i) Next();
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [this] { return outstanding_ == 0; });
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (errors_ > 0) fmt::print(stderr, "{} checks failed\n", errors_.load());
    return static_cast<double>(done_) / elapsed;
  }

 private:
  void Next() {
    {
      std::lock_guard lock(mutex_);
      ++outstanding_;
    }
    const auto submitted = Clock::now();
    limiter_.Check(RequestFor(counter_++, args_.keys), [this, submitted](const Decision& d) {
      if (!d.checked) ++errors_;
      ++done_;
      const auto now = Clock::now();
      {
        std::lock_guard lock(mutex_);
        latencies_us_.push_back(std::chrono::duration<float, std::micro>(now - submitted).count());
      }
      if (now < deadline_) Next();
      std::lock_guard lock(mutex_);
      if (--outstanding_ == 0) idle_.notify_all();
    });
  }

  const Limiter& limiter_;
  const Args& args_;
  Clock::time_point deadline_;
  std::atomic<uint64_t> counter_{0}, done_{0}, errors_{0};
  std::mutex mutex_;
  std::condition_variable idle_;
  int outstanding_ = 0;
  std::vector<float> latencies_us_;
};

double Median(std::vector<double> values) {
  const auto middle = static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), values.begin() + middle, values.end());
  return values[values.size() / 2];
}

// One check at a time, alternating a 1-rule and a 3-rule limiter on the same connection, so
// that both medians see the same moments of a noisy machine. Microseconds.
std::pair<double, double> MedianLatenciesUs(const Limiter& one_rule, const Limiter& three_rules,
                                            const Args& args) {
  std::vector<double> one;
  std::vector<double> three;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(args.seconds));
  for (uint64_t n = 0; Clock::now() < deadline; ++n) {
    const bool odd = n % 2 == 1;
    const auto start = Clock::now();
    (odd ? three_rules : one_rule).CheckBlocking(RequestFor(n / 2, args.keys));
    (odd ? three : one)
        .push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  return {Median(std::move(one)), Median(std::move(three))};
}

template <typename S>
std::shared_ptr<S> Open(const Args& args) {
  const ScriptMode mode = args.mode == "function" ? ScriptMode::kFunction : ScriptMode::kEvalsha;
  const BucketLayout layout =
      args.layout == "compact" ? BucketLayout::kCompact : BucketLayout::kHash;
  std::shared_ptr<S> store;
  if constexpr (std::is_same_v<S, RedisStore>) {
    RedisOptions options;
    options.port = args.port;
    if (args.transport == "tls") {
      options.port = args.tls_port;
      options.tls = TlsOptions{};
      options.tls->ca_file = args.tls_ca;
    } else if (args.transport == "unix") {
      options.unix_path = args.unix_path;
    }
    options.timeout = std::chrono::seconds(2);
    options.mode = mode;
    options.layout = layout;
    store = std::make_shared<S>(options);
  } else {
    ClusterOptions options;
    options.seeds = {{"127.0.0.1", args.port}};
    options.timeout = std::chrono::seconds(2);
    options.mode = mode;
    options.layout = layout;
    store = std::make_shared<S>(options);
  }
  if (!store->WaitReady(std::chrono::seconds(5))) throw std::runtime_error("redis not ready");
  return store;
}

uint64_t CommandsPerWrite(const std::shared_ptr<Store>& store) {
  const auto* redis = dynamic_cast<const RedisStore*>(store.get());
  if (redis == nullptr) return 0;
  const RedisStoreStats stats = redis->Stats();
  return stats.commands / std::max<uint64_t>(1, stats.writes);
}

// One 1-rule check at a time over TCP, TLS and the Unix socket in turn, so that the three
// medians see the same moments of a noisy machine. Microseconds, in that order.
std::vector<double> MedianTransportLatenciesUs(const Args& args) {
  const std::vector<std::string> transports = {"tcp", "tls", "unix"};
  std::vector<std::unique_ptr<Limiter>> limiters;
  for (const std::string& transport : transports) {
    Args over = args;
    over.transport = transport;
    limiters.push_back(MakeLimiter(1, Open<RedisStore>(over), args));
  }
  std::vector<std::vector<double>> samples(transports.size());
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(args.seconds));
  for (uint64_t n = 0; Clock::now() < deadline; ++n) {
    const size_t which = n % transports.size();
    const auto start = Clock::now();
    limiters[which]->CheckBlocking(RequestFor(n / transports.size(), args.keys));
    samples[which].push_back(
        std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  std::vector<double> medians;
  medians.reserve(samples.size());
  for (auto& s : samples) medians.push_back(Median(std::move(s)));
  return medians;
}

void Run(const Args& args) {
  if (args.compare_transports) {
    const std::vector<double> us = MedianTransportLatenciesUs(args);
    fmt::print(
        "{{\"median_latency_us_tcp\": {:.1f}, \"median_latency_us_tls\": {:.1f}, "
        "\"median_latency_us_unix\": {:.1f}}}\n",
        us[0], us[1], us[2]);
    return;
  }
  std::shared_ptr<Store> store;
  if (args.cluster) {
    store = Open<ClusterStore>(args);
  } else {
    store = Open<RedisStore>(args);
  }
  if (args.in_flight == 0) {
    auto [one, three] =
        MedianLatenciesUs(*MakeLimiter(1, store, args), *MakeLimiter(3, store, args), args);
    fmt::print("{{\"median_latency_us_1\": {:.1f}, \"median_latency_us_3\": {:.1f}}}\n", one,
               three);
    return;
  }
  auto limiter = MakeLimiter(args.rules, store, args);
  Saturator saturator(*limiter, args);
  const double checks_per_s = saturator.Run();
  fmt::print(
      "{{\"rules\": {}, \"checks_per_s\": {:.0f}, \"buckets_per_s\": {:.0f}, "
      "\"checks\": {}, \"p99_us\": {:.0f}, \"commands_per_write\": {}}}\n",
      args.rules, checks_per_s, checks_per_s * args.rules, saturator.Done(), saturator.P99Us(),
      CommandsPerWrite(store));
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  try {
    sluice::Args args;
    CLI::App app{"Checks per second of one Sluice process against one redis-server"};
    app.add_option("--port", args.port);
    app.add_option("--rules", args.rules)->check(CLI::Range(1, sluice::kMostRules));
    app.add_option("--in-flight", args.in_flight,
                   "checks kept outstanding; 0 times 1- and 3-rule checks one at a time");
    app.add_option("--seconds", args.seconds);
    app.add_option("--keys", args.keys)->check(CLI::Range(1, 100'000'000));
    app.add_option("--mode", args.mode)->check(CLI::IsMember({"evalsha", "function"}));
    app.add_option("--layout", args.layout)->check(CLI::IsMember({"hash", "compact"}));
    app.add_option("--limit", args.limit, "capacity, tokens a period, period in ms")
        ->expected(3)
        ->check(CLI::PositiveNumber);
    app.add_flag("--cluster", args.cluster, "--port is a seed of a Redis Cluster");
    app.add_option("--wait-replicas", args.wait_replicas, "WAIT for this many replicas")
        ->check(CLI::Range(0, 16));
    app.add_option("--transport", args.transport)->check(CLI::IsMember({"tcp", "tls", "unix"}));
    app.add_option("--tls-port", args.tls_port, "the server's TLS port, for --transport tls");
    app.add_option("--tls-ca", args.tls_ca, "the CA that signed the server's certificate");
    app.add_option("--unix", args.unix_path, "the server's socket, for --transport unix");
    app.add_flag("--compare-transports", args.compare_transports,
                 "times 1-rule checks one at a time over TCP, TLS and the Unix socket in turn");
    CLI11_PARSE(app, argc, argv);
    sluice::Run(args);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
}
