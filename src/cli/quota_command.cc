#include "quota_command.h"

#include <fmt/core.h>

#include <ctime>
#include <memory>
#include <string>

#include "config/config.h"
#include "sluice/quota_admin.h"

namespace sluice::cli {
namespace {

struct QuotaArgs {
  std::string config;
  std::string rule;
  std::string value;
  int64_t used = 0;
};

// CLI11 prints nothing of a RuntimeError: the message goes to standard error here.
[[noreturn]] void Fail(const std::string& message) {
  fmt::print(stderr, "sluice quota: {}\n", message);
  throw CLI::RuntimeError(1);
}

template <typename T>
T OrFail(Result<T> result) {
  if (!result.ok()) Fail(result.status().message());
  return std::move(result).value();
}

// "2025-02-01T00:00:00Z", with milliseconds when there are any.
std::string Utc(int64_t unix_ms) {
  const auto seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  const int64_t ms = unix_ms % 1000;
  return ms == 0 ? fmt::format("{}Z", text) : fmt::format("{}.{:03}Z", text, ms);
}

config::Config LoadQuotaConfig(const std::string& path) {
  config::Config config = OrFail(config::LoadConfig(path));
  if (!config.quota_store) Fail(path + ": has no quota_store");
  return config;
}

std::unique_ptr<QuotaAdmin> Connect(const config::Config& config) {
  return OrFail(config.quota_store->settings->Admin());
}

const Rule& DurableRule(const config::Config& config, const std::string& name) {
  for (const Rule& rule : config.rules) {
    if (rule.name != name) continue;
    if (!rule.durable) Fail("rule \"" + name + "\" is not durable: its counts are not kept here");
    return rule;
  }
  Fail(config.source + ": no rule is named \"" + name + "\"");
}

// One line a person reads and a script splits: used=N limit=N remaining=N window_start=...
void Print(const Rule& rule, const std::string& value, const QuotaUsage& usage) {
  const int64_t limit = rule.LimitFor(value).capacity;
  fmt::print("used={} limit={} remaining={} window_start={} window_end={}\n", usage.used, limit,
             std::max<int64_t>(0, limit - usage.used), Utc(usage.window_start_ms),
             Utc(usage.window_end_ms));
}

void Get(const QuotaArgs& args) {
  const config::Config config = LoadQuotaConfig(args.config);
  const Rule& rule = DurableRule(config, args.rule);
  Print(rule, args.value,
        OrFail(Connect(config)->Get(rule.BucketName(), args.value, WindowOf(rule))));
}

void Set(const QuotaArgs& args, int64_t used) {
  const config::Config config = LoadQuotaConfig(args.config);
  const Rule& rule = DurableRule(config, args.rule);
  Print(rule, args.value,
        OrFail(Connect(config)->Set(rule.BucketName(), args.value, WindowOf(rule), used)));
}

void Init(const QuotaArgs& args) {
  const config::Config config = LoadQuotaConfig(args.config);
  if (Status s = Connect(config)->Init(); !s.ok()) Fail(s.message());
  fmt::print("{}: the quota table and functions are in place\n",
             config.quota_store->settings->Describe());
}

// The options every subcommand takes.
CLI::App* Subcommand(CLI::App& quota, const char* name, const char* what, QuotaArgs& args,
                     bool names_a_quota) {
  CLI::App* cmd = quota.add_subcommand(name, what);
  cmd->add_option("--config", args.config, "the YAML configuration (its quota_store and rules)")
      ->required();
  if (names_a_quota) {
    cmd->add_option("--rule", args.rule, "the durable rule's name")->required();
    cmd->add_option("--value", args.value, "the attribute's value (an API key, a tenant)")
        ->required();
  }
  return cmd;
}

}  // namespace

void AddQuotaCommand(CLI::App& app) {
  auto args = std::make_shared<QuotaArgs>();
  CLI::App* quota = app.add_subcommand(
      "quota", "Show, set or reset a durable rule's quota in the quota store, or make its table");
  quota->require_subcommand(1);
  Subcommand(*quota, "get", "Print a quota's count, limit and window", *args, true)
      ->callback([args] { Get(*args); });
  CLI::App* set =
      Subcommand(*quota, "set", "Set a quota's count in its present window", *args, true);
  set->add_option("--used", args->used, "the count")->required()->check(CLI::NonNegativeNumber);
  set->callback([args] { Set(*args, args->used); });
  Subcommand(*quota, "reset", "Set a quota's count in its present window to 0", *args, true)
      ->callback([args] { Set(*args, 0); });
  Subcommand(*quota, "init", "Create the quota table and functions, or bring them up to date",
             *args, false)
      ->callback([args] { Init(*args); });
}

}  // namespace sluice::cli
