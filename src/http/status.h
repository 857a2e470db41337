// What the admin listener shows people: the values each rule rejects most (/debug/top), the
// state of the gateway for its status page (/status.json), the page itself (/), and the query
// strings they take. Secrets never appear: store passwords are left out, and API keys, header
// values and descriptor values are masked unless `debug_top.reveal_keys` says otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "http/rejected_values.h"
#include "http/status_history.h"
#include "sluice/status.h"

namespace sluice::http {

// A query string's parameters, percent-decoded. Refused (kInvalidArgument): a parameter not in
// `allowed`, one given twice, an empty name, a malformed percent escape, a control character.
Result<std::map<std::string, std::string, std::less<>>> ParseQuery(
    std::string_view query, std::initializer_list<std::string_view> allowed);

// How a rule's values are shown: addresses and tenants whole, API keys and headers masked.
ValueKind ValueKindOf(const Rule& rule);

// The configuration in force as people may see it, as JSON: no password; keys in `tenants` and
// `overrides` masked unless `config.debug_top.reveal_keys`.
std::string ConfigJson(const config::Config& config);

// What /debug/top and /status.json read, of one moment.
struct StatusView {
  const config::Config* config = nullptr;
  std::vector<const RejectedValues*> rules;                           // per rule of `config`
  std::vector<std::pair<std::string, const RejectedValues*>> limits;  // the RLS's, by name
  int64_t now_ms = 0;  // on the clock the rejections were recorded with
};

// /debug/top: {"rules": {NAME: [{"value", "rejected", "error"}, ...]}, "limits": {DOMAIN/LIMIT:
// [...]}}, most rejected first; `only` keeps the rule or limit of that name, `n` at most that
// many values each.
std::string DebugTopJson(const StatusView& view, std::optional<std::string_view> only, size_t n);

// /status.json: health, the store's recent latency, each rule's rates over the last `seconds`
// and its top rejected values, the limits' top values, and the configuration (ConfigJson).
struct Health {
  bool ready = false;
  int64_t uptime_s = 0;
};
std::string StatusJson(const StatusView& view, const StatusHistory& history, const Health& health,
                       int64_t seconds);

// The status page: one self-contained HTML document (no external scripts, fonts or styles),
// embedded at build time from status_page.html.
std::string_view StatusPageHtml();

}  // namespace sluice::http
