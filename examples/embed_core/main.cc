// Checks one API key three times against 2 requests a minute on the memory store, and prints
// each answer: "1 allow 1", "2 allow 0", "3 reject 0 retry_after=30s".
#include <sluice/limiter.h>
#include <sluice/memory_store.h>

#include <cstdio>
#include <memory>

int main() {
  auto limiter =
      sluice::Limiter::Create({{.name = "per-key", .attribute = "key", .limit = {2, 2, 60'000}}},
                              {}, std::make_shared<sluice::MemoryStore>());
  if (!limiter.ok()) {
    std::fprintf(stderr, "%s\n", limiter.status().ToString().c_str());
    return 1;
  }
  for (int n = 1; n <= 3; ++n) {
    const sluice::Decision d = (*limiter)->CheckBlocking({{"key", "ak_abc123"}});
    std::printf("%d %s %lld", n, d.allowed ? "allow" : "reject",
                static_cast<long long>(d.verdicts.at(0).remaining));
    if (!d.allowed) std::printf(" retry_after=%llds", static_cast<long long>(d.retry_after_s));
    std::printf("\n");
  }
  return 0;
}
