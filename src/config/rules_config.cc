#include "config/rules_config.h"

#include <set>
#include <string>

#include "common/registry.h"
#include "config/quota_store_config.h"
#include "config/schema.h"
#include "core/algorithm_kind.h"
#include "stores/local/counting_modes.h"

namespace sluice::config {
namespace {

// `key:` names the attribute a rule counts by: ip, key, tenant, or header:NAME.
std::string ParseRuleKey(const YamlField& f) {
  std::string key = f.String();
  if (key == "ip" || key == "key" || key == "tenant" ||
      (key.starts_with("header:") && key.size() > 7)) {
    return key;
  }
  f.Fail("\"" + key + "\" is not one of ip | key | tenant | header:NAME");
}

// A calendar period (a durable rule's) is kept as its longest length.
Limit ParseLimit(const YamlField& f, Limit base, CalendarPeriod calendar = CalendarPeriod::kNone) {
  if (f.Has("capacity")) base.capacity = f["capacity"].Integer(1, Limit::kMaxCapacity);
  base.tokens = f.Has("tokens") ? f["tokens"].Integer(1, Limit::kMaxCapacity) : base.capacity;
  if (calendar != CalendarPeriod::kNone) {
    base.period_ms = LongestPeriodMs(calendar);
  } else if (f.Has("period")) {
    base.period_ms = f["period"].Duration().count();
  }
  return base;
}

// The mode a rule's `counting` names: the default (shared) when it names none.
const stores::CountingMode& CountingModeNamed(const YamlField& rule) {
  const std::vector<stores::CountingMode>& modes = stores::CountingModes();
  if (!rule.Has("counting")) return modes.front();
  const std::string name = rule["counting"].OneOf(NamesOf(modes, &stores::CountingMode::name));
  return *FindNamed(modes, &stores::CountingMode::name, name);
}

// `counting` of a rule, and the fields of its mode; another mode's fields are refused.
void ParseCounting(const YamlField& f, LocalCounting& counting) {
  const stores::CountingMode& chosen = CountingModeNamed(f);
  for (const stores::CountingMode& other : stores::CountingModes()) {
    for (std::string_view field : other.fields) {
      if (&other != &chosen && f.Has(std::string(field))) {
        f[std::string(field)].Fail("needs counting: " + std::string(other.name));
      }
    }
  }
  counting.mode = chosen.mode;
  chosen.parse(f, counting);
}

// `cost_from: {response_header: NAME}`: the cost a response reports, charged after it.
std::string ParseCostFrom(const YamlField& from) {
  from.ExpectMap(KeysOf("rules[].cost_from"));
  if (!from.Has("response_header")) from.Fail("needs response_header");
  std::string header = from["response_header"].String();
  if (header.empty()) from["response_header"].Fail("must not be empty");
  return header;
}

Algorithm ParseAlgorithm(const YamlField& f) {
  return AlgorithmNamed(f.OneOf(NamesOf(AlgorithmKinds(), &AlgorithmKind::name)))->id;
}

ReplicaWait ParseWait(const YamlField& wait) {
  wait.ExpectMap(KeysOf("rules[].wait"));
  if (!wait.Has("replicas") || !wait.Has("timeout")) wait.Fail("needs replicas and timeout");
  return {.replicas = static_cast<int>(wait["replicas"].Integer(1, 64)),
          .timeout_ms = wait["timeout"].Duration().count()};
}

// `match: {methods: [...], path_prefix: ...}`: which requests the rule applies to.
void ParseMatch(const YamlField& match, Rule& rule) {
  match.ExpectMap(KeysOf("rules[].match"));
  if (match.Has("methods")) {
    match["methods"].ForEach([&](const YamlField& m) { rule.methods.push_back(m.String()); });
  }
  if (match.Has("path_prefix")) rule.path_prefix = match["path_prefix"].String();
}

// `overrides: {VALUE: {capacity, tokens, period}}`: each a limit of its own, what it leaves out
// taken from the rule's.
void ParseOverrides(const YamlField& overrides, Rule& rule) {
  overrides.ForEachEntry([&](const std::string& value, const YamlField& o) {
    o.ExpectMap(KeysOf("rules[].overrides.*"));
    rule.overrides.emplace(value, ParseLimit(o, rule.limit));
  });
}

Rule ParseRule(const YamlField& f) {
  f.ExpectMap(KeysOf("rules[]"));
  for (const char* required : {"name", "key", "capacity", "period"}) {
    if (!f.Has(required)) f.Fail(std::string("needs a ") + required);
  }
  Rule rule;
  rule.name = f["name"].String();
  rule.attribute = ParseRuleKey(f["key"]);
  if (f.Has("bucket")) rule.bucket = f["bucket"].String();
  rule.calendar = ParseCalendarPeriod(f);
  rule.limit = ParseLimit(f, {}, rule.calendar);
  if (f.Has("cost")) rule.cost = f["cost"].Integer(0, Limit::kMaxCapacity);
  if (f.Has("shadow")) rule.shadow = f["shadow"].Bool();
  if (f.Has("cost_from")) rule.cost_from_header = ParseCostFrom(f["cost_from"]);
  if (f.Has("algorithm")) rule.algorithm = ParseAlgorithm(f["algorithm"]);
  ParseDurable(f, rule);
  ParseCounting(f, rule.counting);
  if (f.Has("wait")) rule.wait = ParseWait(f["wait"]);
  if (f.Has("match")) ParseMatch(f["match"], rule);
  if (f.Has("overrides")) ParseOverrides(f["overrides"], rule);
  f.Require(rule.Validate());
  return rule;
}

}  // namespace

std::vector<Rule> ParseRules(const YamlField& f) {
  std::vector<Rule> rules;
  std::set<std::string, std::less<>> names;
  std::set<std::string, std::less<>> buckets;
  f.ForEach([&](const YamlField& r) {
    Rule rule = ParseRule(r);
    if (!names.insert(rule.name).second)
      r["name"].Fail("another rule is named \"" + rule.name + "\"");
    if (!buckets.insert(std::string(rule.BucketName())).second) {
      r.Fail("shares the bucket family \"" + std::string(rule.BucketName()) +
             "\" with an earlier rule; give it its own `bucket:` name");
    }
    rules.push_back(std::move(rule));
  });
  return rules;
}

// WAIT holds the store connection while it waits, so a wait must end well within the store's
// timeout; a store without replicas (the memory store) has none to wait for.
void ValidateReplicaWaits(const std::vector<Rule>& rules, const StoreConfig& store,
                          const YamlField& fields) {
  size_t i = 0;
  fields.ForEach([&](const YamlField& field) {
    const ReplicaWait& wait = rules[i++].wait;
    if (wait.replicas == 0) return;
    if (!store.settings->HasReplicas()) {
      field["wait"].Fail("the " + store.type + " store has no replicas");
    }
    const auto timeout = store.settings->Timeout();
    if (2 * wait.timeout_ms > timeout.count()) {
      field["wait"].Fail("its timeout must be at most half the store's timeout (" +
                         std::to_string(timeout.count()) + " ms)");
    }
  });
}

}  // namespace sluice::config
