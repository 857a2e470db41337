// Shared, synced and leased counting on one hot key: G gateways (each a LocalCountingStore on a
// RedisStore of its own, as separate gateway processes would have), T threads each checking as
// fast as they can for a few seconds. Prints one JSON line: checks, admitted against what the
// bucket allows (its capacity plus its refill over the run), store calls per admitted check,
// checks per second, and each gateway's share of what was admitted.
// bench/local_counting_bench runs it in rounds on a pinned redis-server.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <exception>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sluice/limiter.h"
#include "sluice/local_counting_store.h"
#include "sluice/redis_store.h"

namespace sluice {
namespace {

struct Args {
  uint16_t port = 6379;
  std::string counting = "leased";
  int gateways = 2;
  int threads = 2;  // per gateway
  double seconds = 3;
  int64_t capacity = 100'000;
  int64_t tokens = 10'000;  // refilled per second
  double max_fraction = 0.1;
  std::string key = "hot";
};

Counting ModeOf(const std::string& name) {
  if (name == "synced") return Counting::kSynced;
  if (name == "leased") return Counting::kLeased;
  return Counting::kShared;
}

int Run(const Args& args) {
  Rule rule{"per-key", "key", "", {args.capacity, args.tokens, 1000}, 1};
  rule.counting.mode = ModeOf(args.counting);
  rule.counting.lease_max_fraction = args.max_fraction;
  LimiterOptions options;
  options.key_prefix = fmt::format("lcb:{}:{}:", args.counting,
                                   std::chrono::steady_clock::now().time_since_epoch().count());

  RedisOptions redis;
  redis.host = "127.0.0.1";
  redis.port = args.port;
  std::vector<std::shared_ptr<LocalCountingStore>> gateways;
  std::vector<std::unique_ptr<Limiter>> limiters;
  for (int g = 0; g < args.gateways; ++g) {
    auto store = std::make_shared<RedisStore>(redis);
    if (!store->WaitReady(std::chrono::seconds(5))) {
      fmt::print(stderr, "no redis-server on port {}\n", args.port);
      return 1;
    }
    gateways.push_back(std::make_shared<LocalCountingStore>(store));
    auto limiter = Limiter::Create({rule}, options, gateways.back());
    if (!limiter.ok()) {
      fmt::print(stderr, "{}\n", limiter.status().ToString());
      return 1;
    }
    limiters.push_back(std::move(limiter).value());
  }

  std::vector<std::atomic<int64_t>> admitted(static_cast<size_t>(args.gateways));
  std::atomic<int64_t> checks{0};
  std::atomic<bool> stop{false};
  std::latch start(args.gateways * args.threads + 1);
  std::vector<std::thread> threads;
  std::vector<std::vector<float>> latencies_us(static_cast<size_t>(args.gateways * args.threads));
  for (int g = 0; g < args.gateways; ++g) {
    for (int t = 0; t < args.threads; ++t) {
      const size_t slot =
          (static_cast<size_t>(g) * static_cast<size_t>(args.threads)) + static_cast<size_t>(t);
      threads.emplace_back([&, g, mine = &latencies_us[slot]] {
        const Request request{{"key", args.key}};
        start.arrive_and_wait();
        while (!stop.load(std::memory_order_relaxed)) {
          const auto begin = std::chrono::steady_clock::now();
          const bool allowed = limiters[static_cast<size_t>(g)]->CheckBlocking(request).allowed;
          mine->push_back(
              std::chrono::duration<float, std::micro>(std::chrono::steady_clock::now() - begin)
                  .count());
          checks.fetch_add(1, std::memory_order_relaxed);
          if (allowed) admitted[static_cast<size_t>(g)].fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
  }
  start.arrive_and_wait();
  const auto begin = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(args.seconds));
  stop = true;
  for (std::thread& t : threads) t.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();

  int64_t total = 0;
  uint64_t calls = 0;
  std::vector<int64_t> shares;
  for (int g = 0; g < args.gateways; ++g) {
    total += admitted[static_cast<size_t>(g)].load();
    shares.push_back(admitted[static_cast<size_t>(g)].load());
    calls += gateways[static_cast<size_t>(g)]->Stats().store_calls;
  }
  std::vector<float> all_us;
  for (const std::vector<float>& mine : latencies_us)
    all_us.insert(all_us.end(), mine.begin(), mine.end());
  const size_t p99 = all_us.size() * 99 / 100;
  std::nth_element(all_us.begin(), all_us.begin() + static_cast<ptrdiff_t>(p99), all_us.end());
  const auto allowed = static_cast<int64_t>(static_cast<double>(args.capacity) +
                                            elapsed * static_cast<double>(args.tokens));
  fmt::print(
      "{{\"counting\": \"{}\", \"checks\": {}, \"admitted\": {}, \"allowed\": {}, "
      "\"calls_per_admitted\": {:.4f}, \"checks_per_s\": {:.0f}, \"smallest_share\": {:.3f}, "
      "\"p99_us\": {:.0f}, \"shares\": [{}]}}\n",
      args.counting, checks.load(), total, allowed,
      static_cast<double>(calls) / static_cast<double>(std::max<int64_t>(1, total)),
      static_cast<double>(checks.load()) / elapsed,
      static_cast<double>(*std::min_element(shares.begin(), shares.end())) /
          static_cast<double>(std::max<int64_t>(1, total)) * args.gateways,
      all_us.empty() ? 0.0 : all_us[p99], fmt::join(shares, ", "));
  return 0;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  try {
    sluice::Args args;
    CLI::App app{"Shared, synced and leased counting on one hot key"};
    app.add_option("--port", args.port, "a running redis-server on 127.0.0.1");
    app.add_option("--counting", args.counting)
        ->check(CLI::IsMember({"shared", "synced", "leased"}));
    app.add_option("--gateways", args.gateways)->check(CLI::Range(1, 64));
    app.add_option("--threads", args.threads, "per gateway")->check(CLI::Range(1, 256));
    app.add_option("--seconds", args.seconds)->check(CLI::Range(0.1, 600.0));
    app.add_option("--capacity", args.capacity)->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
    app.add_option("--tokens", args.tokens, "refilled per second")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
    app.add_option("--max-fraction", args.max_fraction)->check(CLI::Range(0.001, 1.0));
    CLI11_PARSE(app, argc, argv);
    return sluice::Run(args);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
}
