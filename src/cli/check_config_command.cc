#include "check_config_command.h"

#include <fmt/core.h>

#include <memory>
#include <string>

#include "config/config.h"
#include "sluice/memory_store.h"

namespace sluice::cli {
namespace {

// Everything `serve` would refuse, refused here: the file, then the limiter built from it.
int CheckConfig(const std::string& path) {
  Result<config::Config> loaded = config::LoadConfig(path);
  if (!loaded.ok()) {
    fmt::print(stderr, "{}\n", loaded.status().message());
    return 1;
  }
  const config::Config& c = *loaded;
  auto limiter =
      Limiter::Create(c.rules, config::LimiterOptionsOf(c), std::make_shared<MemoryStore>());
  if (!limiter.ok()) {
    fmt::print(stderr, "{}: {}\n", path, limiter.status().message());
    return 1;
  }
  fmt::print("{}: ok ({} rules, {} store, listening on {})\n", path, c.rules.size(),
             c.store.type == config::StoreType::kMemory ? "memory" : "redis", c.listen.ToString());
  return 0;
}

}  // namespace

void AddCheckConfigCommand(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("check-config", "Validate a configuration file and exit");
  cmd->add_option("file", *path, "the YAML configuration")->required();
  cmd->callback([path] {
    if (int rc = CheckConfig(*path); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace sluice::cli
