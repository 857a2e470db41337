#include "config/rules_config.h"

#include <set>
#include <string>

#include "config/quota_store_config.h"
#include "config/schema.h"

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

// `counting`, `sync_interval` and `lease` of a rule.
void ParseCounting(const YamlField& f, LocalCounting& counting) {
  if (f.Has("counting")) {
    const std::string mode = f["counting"].OneOf({"shared", "synced", "leased"});
    counting.mode = mode == "synced"   ? Counting::kSynced
                    : mode == "leased" ? Counting::kLeased
                                       : Counting::kShared;
  }
  if (f.Has("sync_interval")) {
    if (counting.mode != Counting::kSynced) f["sync_interval"].Fail("needs counting: synced");
    counting.sync_interval_ms = f["sync_interval"].Duration().count();
  }
  if (f.Has("lease")) {
    YamlField lease = f["lease"];
    if (counting.mode != Counting::kLeased) lease.Fail("needs counting: leased");
    lease.ExpectMap(KeysOf("rules[].lease"));
    if (lease.Has("max_fraction"))
      counting.lease_max_fraction = lease["max_fraction"].Fraction(0, 1);
    if (lease.Has("ttl")) counting.lease_ttl_ms = lease["ttl"].Duration().count();
  }
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
  const std::string algorithm = f.OneOf({"token-bucket", "gcra", "fixed-window"});
  return algorithm == "gcra"           ? Algorithm::kGcra
         : algorithm == "fixed-window" ? Algorithm::kFixedWindow
                                       : Algorithm::kTokenBucket;
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
// timeout; the memory store has no replicas to wait for.
void ValidateReplicaWaits(const std::vector<Rule>& rules, const StoreConfig& store,
                          const YamlField& fields) {
  size_t i = 0;
  fields.ForEach([&](const YamlField& field) {
    const ReplicaWait& wait = rules[i++].wait;
    if (wait.replicas == 0) return;
    if (store.type == StoreType::kMemory) field["wait"].Fail("the memory store has no replicas");
    const auto timeout = StoreTimeout(store);
    if (2 * wait.timeout_ms > timeout.count()) {
      field["wait"].Fail("its timeout must be at most half the store's timeout (" +
                         std::to_string(timeout.count()) + " ms)");
    }
  });
}

}  // namespace sluice::config
