#include "check_command.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "config/duration.h"
#include "open_store.h"
#include "sluice/limiter.h"
#include "stores/quota_store_kind.h"
#include "stores/store_kind.h"

namespace sluice::cli {
namespace {

struct CheckArgs {
  std::string store = "memory";
  std::string mode = "evalsha";
  std::string timeout = "50ms";
  std::string policy = "charge-all";
  std::string failure = "open";
  std::string prefix = "rl:";
  std::vector<std::string> rules;
  std::vector<std::string> attributes;
  int count = 1;
  std::string interval = "0ms";
  // TLS: on for rediss://, and for sentinel:// and cluster:// when any of these is given.
  bool tls = false;
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_server_name;
  std::string password_file;
  // Durable rules, by name, counted in the quota store at this URL.
  std::vector<std::string> durable;
  std::string quota_store;
  std::string quota_password_file;
  std::string quota_timeout = "200ms";
  std::string quota_failure = "closed";
};

// A command line CLI11 refuses, with its usage.
[[noreturn]] void Refuse(const std::string& message) { throw CLI::ValidationError(message); }

template <typename T>
T OrRefuse(Result<T> result) {
  if (!result.ok()) Refuse(result.status().message());
  return std::move(result).value();
}

int64_t ParseCount(std::string_view text, std::string_view what) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    Refuse(fmt::format("{} \"{}\" is not a whole number", what, text));
  }
  return value;
}

// "name:attribute:capacity:tokens:period[:cost]", e.g. "per-key:key:100:100:1m".
Rule ParseRule(const std::string& spec) {
  std::vector<std::string_view> parts;
  std::string_view rest = spec;
  for (size_t colon; (colon = rest.find(':')) != std::string_view::npos;) {
    parts.push_back(rest.substr(0, colon));
    rest.remove_prefix(colon + 1);
  }
  parts.push_back(rest);
  if (parts.size() != 5 && parts.size() != 6) {
    Refuse("--rule \"" + spec + "\": expected name:attribute:capacity:tokens:period[:cost]");
  }
  Rule rule;
  rule.name = std::string(parts[0]);
  rule.attribute = std::string(parts[1]);
  rule.limit.capacity = ParseCount(parts[2], "capacity");
  rule.limit.tokens = ParseCount(parts[3], "tokens");
  rule.calendar = CalendarPeriodNamed(parts[4]);
  rule.limit.period_ms = rule.calendar != CalendarPeriod::kNone
                             ? LongestPeriodMs(rule.calendar)
                             : OrRefuse(config::ParseDurationMs(parts[4]));
  if (parts.size() == 6) rule.cost = ParseCount(parts[5], "cost");
  return rule;
}

Request ParseRequest(const std::vector<std::string>& attributes) {
  Request request;
  for (const std::string& a : attributes) {
    size_t eq = a.find('=');
    if (eq == std::string::npos) Refuse("--attr \"" + a + "\": expected name=value");
    request.Set(a.substr(0, eq), a.substr(eq + 1));
  }
  return request;
}

// `fields`, read by `parse` as the configuration's are, its refusals naming `source`.
template <typename T>
Result<T> ReadFields(const YAML::Node& fields, const std::string& source,
                     const std::function<T(const config::YamlField&)>& parse) {
  YAML::Emitter yaml;
  yaml << fields;
  return config::ReadYamlDocument<T>(yaml.c_str(), source, {}, parse);
}

// The `tls:` the TLS flags stand for, or a null node when none is given.
YAML::Node TlsFieldsOf(const CheckArgs& args) {
  const bool flagged = args.tls || !args.tls_ca.empty() || !args.tls_cert.empty() ||
                       !args.tls_key.empty() || !args.tls_server_name.empty();
  if (!flagged) return {};
  YAML::Node tls(YAML::NodeType::Map);
  const std::pair<const char*, const std::string*> fields[] = {
      {"ca_file", &args.tls_ca},
      {"cert_file", &args.tls_cert},
      {"key_file", &args.tls_key},
      {"server_name", &args.tls_server_name}};
  for (const auto& [field, value] : fields) {
    if (!value->empty()) tls[field] = *value;
  }
  return tls;
}

// Refuses `url`, given to `flag`, that none of `kinds` answers to, naming what they answer to: a
// URL of their schemes, or a kind without schemes by its type.
template <typename Kind>
[[noreturn]] void RefuseUrl(const char* flag, const std::string& url,
                            const std::vector<Kind>& kinds) {
  std::string names;
  for (const Kind& kind : kinds) {
    for (std::string_view scheme : kind.url_schemes) names += ", " + std::string(scheme) + "...";
    if (kind.url_schemes.empty()) names += ", " + std::string(kind.type);
  }
  Refuse(std::string(flag) + " \"" + url + "\": expected one of " + names.substr(2));
}

// The `store:` fields the flags stand for: the --store URL's, then --mode and --timeout where
// the kind takes them, --password-file and the TLS flags, all read as the configuration's are.
config::StoreConfig StoreConfigOf(const CheckArgs& args) {
  const stores::StoreKind* kind = stores::StoreKindForUrl(args.store);
  if (kind == nullptr) RefuseUrl("--store", args.store, stores::StoreKinds());
  YAML::Node fields =
      kind->url_fields ? OrRefuse(kind->url_fields(args.store)) : YAML::Node(YAML::NodeType::Map);
  fields["type"] = std::string(kind->type);
  const auto takes = [&](std::string_view field) {
    return std::find(kind->fields.begin(), kind->fields.end(), field) != kind->fields.end();
  };
  if (takes("mode")) fields["mode"] = args.mode;
  if (takes("timeout")) fields["timeout"] = args.timeout;
  if (!args.password_file.empty()) fields["password_file"] = args.password_file;
  if (YAML::Node tls = TlsFieldsOf(args); !tls.IsNull()) fields["tls"] = tls;
  return OrRefuse(
      ReadFields<config::StoreConfig>(fields, "--store and its flags", config::ParseStore));
}

// Marks the rules --durable names; a calendar period is for those alone.
void MarkDurable(const CheckArgs& args, std::vector<Rule>& rules) {
  for (const std::string& name : args.durable) {
    auto rule =
        std::find_if(rules.begin(), rules.end(), [&](const Rule& r) { return r.name == name; });
    if (rule == rules.end()) Refuse("--durable " + name + ": no --rule is named so");
    rule->durable = true;
    rule->algorithm = Algorithm::kFixedWindow;
  }
  if (!args.durable.empty() && args.quota_store.empty()) Refuse("--durable needs --quota-store");
}

// The `quota_store:` fields the --quota-store flags stand for, read as the configuration's are.
config::QuotaStoreConfig QuotaStoreConfigOf(const CheckArgs& args) {
  const stores::QuotaStoreKind* kind = stores::QuotaStoreKindForUrl(args.quota_store);
  if (kind == nullptr) RefuseUrl("--quota-store", args.quota_store, stores::QuotaStoreKinds());
  YAML::Node fields;
  fields["type"] = std::string(kind->type);
  fields["url"] = args.quota_store;
  if (!args.quota_password_file.empty()) fields["password_file"] = args.quota_password_file;
  fields["timeout"] = args.quota_timeout;
  fields["pool"] = 1;
  return OrRefuse(ReadFields<config::QuotaStoreConfig>(fields, "--quota-store and its flags",
                                                       config::ParseQuotaStore));
}

LimiterOptions LimiterOptionsOf(const CheckArgs& args) {
  LimiterOptions options;
  options.key_prefix = args.prefix;
  options.policy = OrRefuse(config::ParsePolicy(args.policy));
  options.failure = OrRefuse(config::ParseFailurePolicy(args.failure));
  options.quota_failure = OrRefuse(config::ParseFailurePolicy(args.quota_failure));
  if (!args.quota_store.empty()) {
    options.quota_store = OrRefuse(QuotaStoreConfigOf(args).settings->Open()).store;
  }
  return options;
}

void Print(int n, const Decision& d, const Limiter& limiter) {
  std::string line = fmt::format("{} {}", n, d.allowed ? "allow" : "reject");
  if (!d.checked) line += fmt::format(" unchecked error=\"{}\"", d.error.ToString());
  for (const RuleVerdict& v : d.verdicts) {
    line += fmt::format(" {}={}/{}", limiter.rules()[v.rule].name, v.allowed ? "ok" : "no",
                        v.remaining);
  }
  if (d.rejecting) {
    line += fmt::format(" retry_after={}s rejected_by={}", d.retry_after_s,
                        limiter.rules()[d.verdicts[*d.rejecting].rule].name);
  }
  fmt::print("{}\n", line);
}

void Run(const CheckArgs& args) {
  std::vector<Rule> rules;
  for (const std::string& spec : args.rules) rules.push_back(ParseRule(spec));
  MarkDurable(args, rules);
  Request request = ParseRequest(args.attributes);
  const auto interval = std::chrono::milliseconds(OrRefuse(config::ParseDurationMs(args.interval)));
  auto limiter = OrRefuse(Limiter::Create(rules, LimiterOptionsOf(args),
                                          OrRefuse(OpenStore(StoreConfigOf(args))).store));
  for (int n = 1; n <= args.count; ++n) {
    Print(n, limiter->CheckBlocking(request), *limiter);
    std::fflush(stdout);
    if (n < args.count) std::this_thread::sleep_for(interval);
  }
}

}  // namespace

void AddCheckCommand(CLI::App& app) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* cmd =
      app.add_subcommand("check", "Check one request against rules and print decisions");
  cmd->add_option("--store", args->store,
                  "memory, redis://[user:password@]host:port[/db], rediss://... (TLS), "
                  "unix:///path[?db=N], sentinel://host:port[,host:port...]/MASTER[?db=N], or "
                  "cluster://host:port,...")
      ->capture_default_str();
  cmd->add_flag("--tls", args->tls, "TLS to sentinels or cluster nodes (rediss:// is TLS already)");
  cmd->add_option("--tls-ca", args->tls_ca, "CA certificates (PEM); default: the system's");
  cmd->add_option("--tls-cert", args->tls_cert, "client certificate (PEM)");
  cmd->add_option("--tls-key", args->tls_key, "client certificate's key (PEM)");
  cmd->add_option("--tls-server-name", args->tls_server_name,
                  "name the server's certificate must carry (and SNI)");
  cmd->add_option("--password-file", args->password_file,
                  "read the password from this file rather than the URL");
  cmd->add_option("--mode", args->mode, "evalsha or function (Redis only)")->capture_default_str();
  cmd->add_option("--timeout", args->timeout, "per-check timeout (Redis only)")
      ->capture_default_str();
  cmd->add_option("--policy", args->policy, "charge-all, stop-at-first, refund or all-or-nothing")
      ->capture_default_str();
  cmd->add_option("--failure", args->failure, "open or closed")->capture_default_str();
  cmd->add_option("--prefix", args->prefix, "bucket key prefix")->capture_default_str();
  cmd->add_option("--rule", args->rules,
                  "name:attribute:capacity:tokens:period[:cost]; a durable rule's period may be "
                  "day, week, month or year")
      ->required();
  cmd->add_option("--durable", args->durable,
                  "count this rule (by name) in the quota store, never exceeded");
  cmd->add_option("--quota-store", args->quota_store,
                  "the quota store of durable rules: postgresql://user@host:port/dbname");
  cmd->add_option("--quota-password-file", args->quota_password_file,
                  "read the quota store's password from this file");
  cmd->add_option("--quota-timeout", args->quota_timeout, "per-check timeout of the quota store")
      ->capture_default_str();
  cmd->add_option("--quota-failure", args->quota_failure,
                  "when the quota store fails: open or closed")
      ->capture_default_str();
  cmd->add_option("--attr", args->attributes, "request attribute, name=value");
  cmd->add_option("--count", args->count, "how many times to check")
      ->capture_default_str()
      ->check(CLI::Range(1, 100'000'000));
  cmd->add_option("--interval", args->interval, "pause between checks")->capture_default_str();
  cmd->callback([args] { Run(*args); });
}

}  // namespace sluice::cli
