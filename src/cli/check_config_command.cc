#include "check_config_command.h"

#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <string>

#include "config/config.h"
#include "rls/descriptor_config.h"
#include "sluice/local_counting_store.h"
#include "sluice/quota_store.h"
#include "stores/store_kind.h"

namespace sluice::cli {
namespace {

// Stands for the quota store while the limiter's rules are validated: it is never asked.
class UnaskedQuotaStore final : public QuotaStore {
 public:
  void Take(std::vector<QuotaOp> /*ops*/, QuotaCallback done) override {
    done(Status::Unavailable("not asked while checking a configuration"));
  }
  bool Ready() const override { return false; }
};

// Everything `serve` would refuse, refused here: the file, the limiter built from it, and the
// rate limit service's descriptor files.
int ValidateConfigFile(const std::string& path) {
  Result<config::Config> loaded = config::LoadConfig(path);
  if (!loaded.ok()) {
    fmt::print(stderr, "{}\n", loaded.status().message());
    return 1;
  }
  const config::Config& c = *loaded;
  if (Status credentials = c.store.settings->CheckCredentials(); !credentials.ok()) {
    fmt::print(stderr, "{}: store: {}\n", path, credentials.message());
    return 1;
  }
  if (c.quota_store) {
    if (Status secrets = c.quota_store->settings->CheckCredentials(); !secrets.ok()) {
      fmt::print(stderr, "{}: quota_store: {}\n", path, secrets.message());
      return 1;
    }
  }
  // The default store (memory) stands in for the configured one; rules that count locally get
  // local counts in front of it, as `serve` gives them.
  std::shared_ptr<Store> store =
      stores::DefaultStoreSettings()->Open({nullptr}, 1).value().stores.front();
  if (std::any_of(c.rules.begin(), c.rules.end(),
                  [](const Rule& r) { return r.CountsLocally(); })) {
    store = std::make_shared<LocalCountingStore>(store);
  }
  LimiterOptions options = config::LimiterOptionsOf(c);
  if (c.quota_store) options.quota_store = std::make_shared<UnaskedQuotaStore>();
  auto limiter = Limiter::Create(c.rules, options, store);
  if (!limiter.ok()) {
    fmt::print(stderr, "{}: {}\n", path, limiter.status().message());
    return 1;
  }
  size_t domains = 0;
  if (c.rls) {
    auto files = rls::LoadDomainConfigs(c.rls->config);
    if (!files.ok()) {
      fmt::print(stderr, "{}\n", files.status().message());
      return 1;
    }
    domains = files->size();
  }
  fmt::print("{}: ok ({} rules, {} rate limit service domains, {} store, listening on {})\n", path,
             c.rules.size(), domains, c.store.settings->Kind(),
             c.proxy ? c.listen.ToString() : "no proxy");
  return 0;
}

}  // namespace

void AddCheckConfigCommand(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("check-config", "Validate a configuration file and exit");
  cmd->add_option("file", *path, "the YAML configuration")->required();
  cmd->callback([path] {
    if (int rc = ValidateConfigFile(*path); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace sluice::cli
