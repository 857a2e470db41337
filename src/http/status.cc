#include "http/status.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/algorithm_kind.h"
#include "stores/local/counting_modes.h"

namespace sluice::http {

using json = nlohmann::json;

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<std::string> PercentDecoded(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '+') {
      c = ' ';
    } else if (c == '%') {
      const int high = i + 2 < text.size() ? HexDigit(text[i + 1]) : -1;
      const int low = i + 2 < text.size() ? HexDigit(text[i + 2]) : -1;
      if (high < 0 || low < 0) return Status::InvalidArgument("a malformed percent escape");
      c = static_cast<char>(high * 16 + low);
      i += 2;
    }
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return Status::InvalidArgument("a control character in the query");
    }
    out += c;
  }
  return out;
}

// Never throws on values that are not UTF-8 (a header may carry anything): they are replaced.
std::string Dump(const json& doc) {
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

const char* PolicyName(MultiRulePolicy policy) {
  switch (policy) {
    case MultiRulePolicy::kChargeAll:
      return "charge-all";
    case MultiRulePolicy::kStopAtFirst:
      return "stop-at-first";
    case MultiRulePolicy::kRefund:
      return "refund";
    case MultiRulePolicy::kAllOrNothing:
      return "all-or-nothing";
  }
  return "";
}

json LimitJson(const Limit& limit) {
  return {{"capacity", limit.capacity}, {"tokens", limit.tokens}, {"period_ms", limit.period_ms}};
}

// The store's address and settings; of its credentials only whether there are any.
json StoreJson(const config::StoreConfig& store) {
  json out = {{"type", store.type}};
  store.settings->StatusJson(out);
  return out;
}

json RuleJson(const Rule& rule, bool reveal) {
  json out = {{"name", rule.name},
              {"key", rule.attribute},
              {"limit", LimitJson(rule.limit)},
              {"cost", rule.cost},
              {"algorithm", std::string(AlgorithmOf(rule.algorithm).name)},
              {"counting", std::string(stores::CountingModeOf(rule.counting.mode).name)},
              {"shadow", rule.shadow}};
  if (!rule.bucket.empty()) out["bucket"] = rule.bucket;
  if (!rule.methods.empty()) out["methods"] = rule.methods;
  if (!rule.path_prefix.empty()) out["path_prefix"] = rule.path_prefix;
  if (!rule.cost_from_header.empty()) out["cost_from"] = rule.cost_from_header;
  if (rule.durable) out["durable"] = true;
  if (rule.wait.replicas > 0) {
    out["wait"] = {{"replicas", rule.wait.replicas}, {"timeout_ms", rule.wait.timeout_ms}};
  }
  stores::CountingModeOf(rule.counting.mode).status(rule.counting, out);
  if (!rule.overrides.empty()) {
    json overrides = json::object();
    for (const auto& [value, limit] : rule.overrides) {
      overrides[ShownValue(value, ValueKindOf(rule), reveal)] = LimitJson(limit);
    }
    out["overrides"] = overrides;
  }
  return out;
}

json RlsJson(const config::RlsConfig& rls) {
  json out = {{"config", rls.config},
              {"policy", PolicyName(rls.policy)},
              {"quota_mode", rls.quota_mode},
              {"failure", rls.failure == config::RlsFailure::kOpen     ? "open"
                          : rls.failure == config::RlsFailure::kClosed ? "closed"
                                                                       : "error"}};
  out["near_limit_ratio"] = rls.near_limit_ratio;
  out["max_calls_in_flight"] = rls.max_calls_in_flight;
  if (rls.over_limit_cache_keys > 0)
    out["over_limit_cache"] = {{"max_keys", rls.over_limit_cache_keys}};
  if (rls.response_headers) {
    out["response_headers"] = {{"limit", rls.response_headers->limit},
                               {"remaining", rls.response_headers->remaining},
                               {"reset", rls.response_headers->reset}};
  }
  if (rls.listen) out["listen"] = rls.listen->ToString();
  if (rls.json_listen) out["json_listen"] = rls.json_listen->ToString();
  return out;
}

json ConfigDoc(const config::Config& c) {
  const bool reveal = c.debug_top.reveal_keys;
  json out;
  if (c.proxy) out["listen"] = c.listen.ToString();
  if (c.check_listen) out["check_listen"] = c.check_listen->ToString();
  out["admin_listen"] = c.admin_listen.ToString();
  out["threads"] = c.threads;
  if (c.proxy) out["upstream"] = c.upstream.address.ToString();
  out["store"] = StoreJson(c.store);
  out["failure"] = c.failure == FailurePolicy::kOpen ? "open" : "closed";
  out["policy"] = PolicyName(c.policy);
  out["key_prefix"] = c.key_prefix;
  out["hash_tag_values"] = c.hash_tag_values;
  out["near_limit_ratio"] = c.near_limit_ratio;
  out["headers"] = {{"ietf", c.headers.ietf}, {"x-ratelimit", c.headers.x_ratelimit}};
  out["client"] = {
      {"api_key_header", c.client.api_key_header},
      {"tenant_header", c.client.tenant_header},
      {"forwarding_header", c.client.forwarding_header == config::ForwardingHeader::kForwarded
                                ? "forwarded"
                                : "x-forwarded-for"},
      {"trusted_proxies", c.client.trusted_proxies.size()}};
  json tenants = json::object();
  for (const auto& [key, tenant] : c.tenants) {
    tenants[ShownValue(key, ValueKind::kSecret, reveal)] = tenant;
  }
  out["tenants"] = tenants;
  if (c.over_limit_cache_keys > 0)
    out["over_limit_cache"] = {{"max_keys", c.over_limit_cache_keys}};
  out["debug_top"] = {{"size", c.debug_top.size}, {"reveal_keys", reveal}};
  json rules = json::array();
  for (const Rule& rule : c.rules) rules.push_back(RuleJson(rule, reveal));
  out["rules"] = rules;
  if (c.rls) out["rls"] = RlsJson(*c.rls);
  return out;
}

json TopList(const RejectedValues* values, ValueKind kind, bool reveal, int64_t now_ms, size_t n) {
  json list = json::array();
  if (values == nullptr) return list;
  for (const HeavyHitter& h : values->Top(now_ms)) {
    if (list.size() >= n) break;
    list.push_back(
        {{"value", ShownValue(h.value, kind, reveal)}, {"rejected", h.count}, {"error", h.error}});
  }
  return list;
}

double Milliseconds(double seconds) {
  return std::isfinite(seconds) ? seconds * 1000 : -1;  // -1: past the histogram's last bound
}

}  // namespace

Result<std::map<std::string, std::string, std::less<>>> ParseQuery(
    std::string_view query, std::initializer_list<std::string_view> allowed) {
  std::map<std::string, std::string, std::less<>> params;
  while (!query.empty()) {
    const size_t end = std::min(query.find('&'), query.size());
    const std::string_view pair = query.substr(0, end);
    query.remove_prefix(std::min(end + 1, query.size()));
    const size_t equals = pair.find('=');
    Result<std::string> name = PercentDecoded(pair.substr(0, equals));
    if (!name.ok()) return name.status();
    Result<std::string> value = PercentDecoded(
        equals == std::string_view::npos ? std::string_view() : pair.substr(equals + 1));
    if (!value.ok()) return value.status();
    if (name->empty()) return Status::InvalidArgument("a query parameter without a name");
    if (std::find(allowed.begin(), allowed.end(), *name) == allowed.end()) {
      std::string list;
      for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      return Status::InvalidArgument("unknown query parameter \"" + *name +
                                     "\"; this endpoint takes: " + (list.empty() ? "none" : list));
    }
    if (!params.emplace(std::move(name).value(), std::move(value).value()).second) {
      return Status::InvalidArgument("a query parameter given twice");
    }
  }
  return params;
}

ValueKind ValueKindOf(const Rule& rule) {
  return rule.attribute == "ip" || rule.attribute == "tenant" ? ValueKind::kPlain
                                                              : ValueKind::kSecret;
}

std::string ConfigJson(const config::Config& config) { return Dump(ConfigDoc(config)); }

std::string DebugTopJson(const StatusView& view, std::optional<std::string_view> only, size_t n) {
  const config::Config& c = *view.config;
  const bool reveal = c.debug_top.reveal_keys;
  json rules = json::object();
  for (size_t i = 0; i < c.rules.size(); ++i) {
    const Rule& rule = c.rules[i];
    if (only && *only != rule.name) continue;
    rules[rule.name] = TopList(view.rules[i], ValueKindOf(rule), reveal, view.now_ms, n);
  }
  json limits = json::object();
  for (const auto& [name, values] : view.limits) {
    if (only && *only != name) continue;
    json list = TopList(values, ValueKind::kDescriptor, reveal, view.now_ms, n);
    if (!list.empty()) limits[name] = std::move(list);
  }
  return Dump({{"rules", rules}, {"limits", limits}}) + "\n";
}

std::string StatusJson(const StatusView& view, const StatusHistory& history, const Health& health,
                       int64_t seconds) {
  const config::Config& c = *view.config;
  const bool reveal = c.debug_top.reveal_keys;
  const size_t n = c.debug_top.size;
  const RecentLatency recent = history.Recent(60);
  json store = StoreJson(c.store);
  store["ready"] = health.ready;
  store["checks_last_minute"] = recent.checks;
  store["errors_last_minute"] = recent.store_errors;
  store["mean_ms"] = recent.mean_s * 1000;
  store["p50_ms"] = Milliseconds(recent.p50_s);
  store["p99_ms"] = Milliseconds(recent.p99_s);
  json rules = json::array();
  for (size_t i = 0; i < c.rules.size(); ++i) {
    const Rule& rule = c.rules[i];
    std::vector<RatePoint> points = history.Rates(rule.name);
    if (points.size() > static_cast<size_t>(seconds)) {
      points.erase(points.begin(), points.end() - seconds);
    }
    json t = json::array();
    json allowed = json::array();
    json rejected = json::array();
    for (const RatePoint& p : points) {
      t.push_back(p.second);
      allowed.push_back(p.allowed);
      rejected.push_back(p.rejected);
    }
    rules.push_back(
        {{"name", rule.name},
         {"key", rule.attribute},
         {"limit", LimitJson(rule.limit)},
         {"algorithm", std::string(AlgorithmOf(rule.algorithm).name)},
         {"shadow", rule.shadow},
         {"series", {{"t", t}, {"allowed", allowed}, {"rejected", rejected}}},
         {"rejected_last_window", view.rules[i] ? view.rules[i]->Total(view.now_ms) : 0},
         {"top", TopList(view.rules[i], ValueKindOf(rule), reveal, view.now_ms, n)}});
  }
  json limits = json::array();
  for (const auto& [name, values] : view.limits) {
    json list = TopList(values, ValueKind::kDescriptor, reveal, view.now_ms, n);
    if (!list.empty()) limits.push_back({{"name", name}, {"top", std::move(list)}});
  }
  const json doc = {{"ready", health.ready},
                    {"uptime_s", health.uptime_s},
                    {"window_s", RejectedValues::kSlots * RejectedValues::kSlotMs / 1000},
                    {"store", store},
                    {"rules", rules},
                    {"limits", limits},
                    {"config", ConfigDoc(c)}};
  return Dump(doc) + "\n";
}

}  // namespace sluice::http
