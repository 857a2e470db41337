// Checks one request three times against three rules on the memory store and, when given a
// Redis URL, on Redis too, and prints each decision:
//
//   embed [redis://host:port | unix:///path/redis.sock]
//
// "memory 3 reject per-ip=ok/97 per-key=no/0 per-tenant=ok/997 retry_after=30s": the third
// request is one more than the API key's 2 a minute.
#include <sluice/limiter.h>
#include <sluice/memory_store.h>
#include <sluice/redis_store.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace {

std::vector<sluice::Rule> Rules() {
  return {
      {.name = "per-ip", .attribute = "ip", .limit = {100, 100, 60'000}},
      {.name = "per-key", .attribute = "key", .limit = {2, 2, 60'000}},
      {.name = "per-tenant", .attribute = "tenant", .limit = {1'000, 1'000, 3'600'000}},
  };
}

std::string Describe(const sluice::Decision& d, const sluice::Limiter& limiter) {
  std::string line = d.allowed ? "allow" : "reject";
  if (!d.checked) line += " unchecked (" + d.error.ToString() + ")";
  for (const sluice::RuleVerdict& v : d.verdicts) {
    line += " " + limiter.rules()[v.rule].name + (v.allowed ? "=ok/" : "=no/") +
            std::to_string(v.remaining);
  }
  if (!d.allowed && d.checked) line += " retry_after=" + std::to_string(d.retry_after_s) + "s";
  return line;
}

// 0 when every decision was made by the store, 1 when one was the failure policy's.
int CheckOn(const char* name, std::shared_ptr<sluice::Store> store) {
  auto limiter = sluice::Limiter::Create(Rules(), {}, std::move(store));
  if (!limiter.ok()) {
    std::fprintf(stderr, "%s: %s\n", name, limiter.status().ToString().c_str());
    return 1;
  }
  const sluice::Request request{
      {"ip", "203.0.113.42"}, {"key", "ak_abc123"}, {"tenant", "org_acme"}};
  int failures = 0;
  for (int n = 1; n <= 3; ++n) {
    const sluice::Decision d = (*limiter)->CheckBlocking(request);
    std::printf("%s %d %s\n", name, n, Describe(d, **limiter).c_str());
    if (!d.checked) failures = 1;
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2) {
    std::fprintf(stderr, "usage: %s [REDIS_URL]\n", argv[0]);
    return 2;
  }
  int failures = CheckOn("memory", std::make_shared<sluice::MemoryStore>());
  if (argc == 2) {
    sluice::Result<sluice::RedisOptions> options = sluice::ParseRedisUrl(argv[1]);
    if (!options.ok()) {
      std::fprintf(stderr, "%s: %s\n", argv[1], options.status().message().c_str());
      return 2;
    }
    failures |= CheckOn("redis", std::make_shared<sluice::RedisStore>(*options));
  }
  return failures;
}
