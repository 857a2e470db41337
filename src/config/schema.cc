#include "config/schema.h"

#include <algorithm>
#include <array>

namespace sluice::config {
namespace {

// Whether a top-level field is the same in both.
template <auto Member>
bool Same(const Config& a, const Config& b) {
  return a.*Member == b.*Member;
}

// Whether a field of the section `Section` is the same in both.
template <auto Section, auto Member>
bool SameIn(const Config& a, const Config& b) {
  return (a.*Section).*Member == (b.*Section).*Member;
}

// The same for a section that may be absent: its presence counts too.
template <auto Section, auto Member>
bool SameInOptional(const Config& a, const Config& b) {
  const auto& x = a.*Section;
  const auto& y = b.*Section;
  if (x.has_value() != y.has_value()) return false;
  return !x || (*x).*Member == (*y).*Member;
}

// The upstream's address decides whether a proxy runs at all (no `upstream`: none).
bool SameUpstreamAddress(const Config& a, const Config& b) {
  return a.proxy == b.proxy && a.upstream.address == b.upstream.address;
}

constexpr OnReload kReloads = OnReload::kReloads;
constexpr OnReload kRestart = OnReload::kRestart;

// Fields that reload need no comparison: a reload puts whatever they hold in force.
constexpr std::array kSchema{
    SchemaField{"listen", kRestart, &Same<&Config::listen>},
    SchemaField{"check_listen", kRestart, &Same<&Config::check_listen>},
    SchemaField{"admin_listen", kRestart, &Same<&Config::admin_listen>},
    SchemaField{"threads", kRestart, &Same<&Config::threads>},
    SchemaField{"upstream.address", kRestart, &SameUpstreamAddress},
    SchemaField{"upstream.pool", kRestart, &SameIn<&Config::upstream, &UpstreamConfig::pool>},
    SchemaField{"upstream.connect_timeout", kRestart,
                &SameIn<&Config::upstream, &UpstreamConfig::connect_timeout>},
    SchemaField{"upstream.timeout", kRestart, &SameIn<&Config::upstream, &UpstreamConfig::timeout>},
    SchemaField{"upstream.idle_timeout", kRestart,
                &SameIn<&Config::upstream, &UpstreamConfig::idle_timeout>},
    SchemaField{"upstream.max_response_bytes", kRestart,
                &SameIn<&Config::upstream, &UpstreamConfig::max_response_bytes>},
    SchemaField{"store", kRestart, &Same<&Config::store>},
    SchemaField{"quota_store", kRestart, &Same<&Config::quota_store>},
    SchemaField{"failure", kReloads, nullptr},
    SchemaField{"policy", kReloads, nullptr},
    SchemaField{"headers", kReloads, nullptr},
    SchemaField{"client.trusted_proxies", kReloads, nullptr},
    SchemaField{"client.forwarding_header", kReloads, nullptr},
    SchemaField{"client.api_key_header", kReloads, nullptr},
    SchemaField{"client.tenant_header", kReloads, nullptr},
    SchemaField{"tenants", kReloads, nullptr},
    SchemaField{"rules", kReloads, nullptr},
    SchemaField{"key_prefix", kReloads, nullptr},
    SchemaField{"hash_tag_values", kReloads, nullptr},
    SchemaField{"over_limit_cache", kReloads, nullptr},
    SchemaField{"near_limit_ratio", kReloads, nullptr},
    SchemaField{"max_body_bytes", kRestart, &Same<&Config::max_body_bytes>},
    SchemaField{"max_header_bytes", kRestart, &Same<&Config::max_header_bytes>},
    SchemaField{"header_timeout", kRestart, &Same<&Config::header_timeout>},
    SchemaField{"drain_timeout", kRestart, &Same<&Config::drain_timeout>},
    SchemaField{"max_connections", kRestart, &Same<&Config::max_connections>},
    SchemaField{"access_log.path", kRestart,
                &SameInOptional<&Config::access_log, &AccessLogConfig::path>},
    SchemaField{"access_log.format", kRestart,
                &SameInOptional<&Config::access_log, &AccessLogConfig::format>},
    SchemaField{"access_log.buffer_lines", kRestart,
                &SameInOptional<&Config::access_log, &AccessLogConfig::buffer_lines>},
    SchemaField{"debug_top.size", kReloads, nullptr},
    SchemaField{"debug_top.reveal_keys", kReloads, nullptr},
    SchemaField{"rls.listen", kRestart, &SameInOptional<&Config::rls, &RlsConfig::listen>},
    SchemaField{"rls.json_listen", kRestart,
                &SameInOptional<&Config::rls, &RlsConfig::json_listen>},
    SchemaField{"rls.config", kReloads, nullptr},
    SchemaField{"rls.failure", kReloads, nullptr},
    SchemaField{"rls.response_headers", kReloads, nullptr},
    SchemaField{"rls.policy", kReloads, nullptr},
    SchemaField{"rls.over_limit_cache", kReloads, nullptr},
    SchemaField{"rls.quota_mode", kReloads, nullptr},
    SchemaField{"rls.near_limit_ratio", kReloads, nullptr},
    SchemaField{"rls.max_message_bytes", kRestart,
                &SameInOptional<&Config::rls, &RlsConfig::max_message_bytes>},
    SchemaField{"rls.max_concurrent_streams", kRestart,
                &SameInOptional<&Config::rls, &RlsConfig::max_concurrent_streams>},
    SchemaField{"rls.max_calls_in_flight", kReloads, nullptr},
    SchemaField{"rls.keepalive", kRestart, &SameInOptional<&Config::rls, &RlsConfig::keepalive>},
};

}  // namespace

std::span<const SchemaField> Schema() { return kSchema; }

std::vector<std::string_view> KeysOf(std::string_view section) {
  std::vector<std::string_view> keys;
  for (const SchemaField& field : kSchema) {
    std::string_view path = field.path;
    if (!section.empty()) {
      if (!path.starts_with(section) || path.size() <= section.size() ||
          path[section.size()] != '.') {
        continue;
      }
      path.remove_prefix(section.size() + 1);
    }
    const std::string_view key = path.substr(0, path.find('.'));
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  return keys;
}

std::optional<std::string_view> FirstRestartField(const Config& running, const Config& next) {
  for (const SchemaField& field : kSchema) {
    if (field.on_reload == kRestart && !field.same(running, next)) return field.path;
  }
  return std::nullopt;
}

}  // namespace sluice::config
