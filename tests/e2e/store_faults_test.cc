// Faults between a running `sluice serve` and its Redis, injected by a proxy in front of the
// server (support/fault_drill.h): the gateway's requests and the rate limit service's `POST
// /json` calls are each answered within the store's timeout plus 50 ms, by the failure policy
// when Redis cannot answer, never with another request's count, and the process answers from
// Redis again by itself soon after the fault ends.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "e2e/processes.h"
#include "support/fault_drill.h"

namespace sluice {
namespace {

using e2e::GatewayProcess;
using e2e::Upstream;
using std::chrono::milliseconds;
using testing::DrillBucket;
using testing::Fetch;
using testing::HttpResult;

// The count a response carries, or nullopt when the failure policy answered it (`failed`).
std::optional<int64_t> CountOf(const HttpResult& r, int failed, const std::string& count) {
  if (r.status == failed) return std::nullopt;
  EXPECT_EQ(r.status, 200) << r.body;
  if (r.status != 200 || count.empty()) return -1;  // a count no bucket has
  return std::stoll(count);
}

TEST(StoreFaultE2eTest, TheGatewayAndTheRateLimitServiceDecideInTimeThroughEveryFault) {
  testing::RedisServer redis;
  testing::FaultProxy proxy(redis.port());
  Upstream upstream;
  // Threads 0 and 1 ask the gateway, 2 and 3 the rate limit service; every bucket's capacity
  // is its own, since the two share the connections to Redis.
  std::vector<std::vector<DrillBucket>> buckets = testing::DrillBuckets(4, 3, "b");
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("sluice-faults-" + std::to_string(proxy.port()));
  std::filesystem::create_directories(dir);
  std::ostringstream config;
  config << "store: {type: redis, url: 'redis://127.0.0.1:" << proxy.port()
         << "', timeout: " << testing::kDrillTimeout.count() << "ms}\nfailure: closed\n"
         << "rules:\n  - name: per-key\n    key: key\n    capacity: 1000\n"
         << "    period: 1d\n    overrides:\n";
  std::ofstream descriptors(dir / "faults.yaml");
  descriptors << "domain: faults\ndescriptors:\n";
  for (size_t t = 0; t < buckets.size(); ++t) {
    for (const DrillBucket& b : buckets[t]) {
      if (t < 2) {
        config << "      " << b.value << ": {capacity: " << b.capacity
               << ", tokens: " << b.TokensPerDay() << "}\n";
      } else {
        descriptors << "  - key: client\n    value: " << b.value
                    << "\n    rate_limit: {unit: year, requests_per_unit: " << b.capacity << "}\n";
      }
    }
  }
  descriptors.close();
  const uint16_t json = testing::FreePort();
  config << "rls:\n  json_listen: 127.0.0.1:" << json << "\n  config: [" << dir.string()
         << "]\n  failure: error\n";
  GatewayProcess gateway(upstream.port(), config.str());
  ASSERT_TRUE(e2e::WaitUntil([&] { return Fetch(json, "POST", "/json", {}, "{}").status != 0; },
                             milliseconds(5000)));

  // What the store took from a bucket, read from Redis itself.
  const std::unique_ptr<testing::RedisClient> direct = redis.Client();
  auto charged = [&direct](size_t t, const DrillBucket& b) -> int64_t {
    const std::string key = t < 2 ? "rl:key:" + b.value : "rl:rls:faults:client=" + b.value;
    const std::string tokens = direct->String({"HGET", key, "tokens"});
    return tokens.empty() ? 0 : b.capacity - std::llround(std::stod(tokens));
  };
  auto check = [&gateway, json](size_t t, const DrillBucket& b) -> std::optional<int64_t> {
    if (t < 2) {
      const HttpResult r = gateway.Get("/", {{"X-Api-Key", b.value}});
      return CountOf(r, 503, r.Header("x-ratelimit-remaining"));
    }
    const HttpResult r = Fetch(json, "POST", "/json", {{"Content-Type", "application/json"}},
                               R"({"domain": "faults", "descriptors": [{"entries": [)"
                               R"({"key": "client", "value": ")" +
                                   b.value + R"("}]}]})");
    std::string count;
    if (r.status == 200) {
      const auto body = nlohmann::json::parse(r.body, nullptr, false);
      if (!body.is_discarded() && body.contains("statuses")) {
        count = std::to_string(body["statuses"][0].value("limitRemaining", -1));
      }
    }
    return CountOf(r, 503, count);
  };
  testing::CheckLoad load(std::move(buckets), check, charged);
  testing::Drill("sluice serve", proxy, load, {true, true, true, true},
                 testing::EveryFault(milliseconds(400)));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice
