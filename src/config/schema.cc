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

// Whether a keepalive setting of Envoy's rate limit service is the same in both (its section's
// presence included).
template <auto Member>
bool SameKeepalive(const Config& a, const Config& b) {
  if (a.rls.has_value() != b.rls.has_value()) return false;
  return !a.rls || a.rls->keepalive.*Member == b.rls->keepalive.*Member;
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
    SchemaField{"store.type", kRestart, nullptr},
    SchemaField{"store.url", kRestart, nullptr},
    SchemaField{"store.nodes", kRestart, nullptr},
    SchemaField{"store.sentinels", kRestart, nullptr},
    SchemaField{"store.master", kRestart, nullptr},
    SchemaField{"store.db", kRestart, nullptr},
    SchemaField{"store.username", kRestart, nullptr},
    SchemaField{"store.password", kRestart, nullptr},
    SchemaField{"store.password_file", kRestart, nullptr},
    SchemaField{"store.sentinel_username", kRestart, nullptr},
    SchemaField{"store.sentinel_password", kRestart, nullptr},
    SchemaField{"store.sentinel_password_file", kRestart, nullptr},
    SchemaField{"store.tls.ca_file", kRestart, nullptr},
    SchemaField{"store.tls.cert_file", kRestart, nullptr},
    SchemaField{"store.tls.key_file", kRestart, nullptr},
    SchemaField{"store.tls.server_name", kRestart, nullptr},
    SchemaField{"store.tls.verify", kRestart, nullptr},
    SchemaField{"store.mode", kRestart, nullptr},
    SchemaField{"store.layout", kRestart, nullptr},
    SchemaField{"store.timeout", kRestart, nullptr},
    SchemaField{"store.connect_timeout", kRestart, nullptr},
    SchemaField{"store.max_in_flight", kRestart, nullptr},
    SchemaField{"store.refresh_interval", kRestart, nullptr},
    SchemaField{"store.max_buckets", kRestart, nullptr},
    SchemaField{"quota_store.type", kRestart, nullptr},
    SchemaField{"quota_store.url", kRestart, nullptr},
    SchemaField{"quota_store.password", kRestart, nullptr},
    SchemaField{"quota_store.password_file", kRestart, nullptr},
    SchemaField{"quota_store.timeout", kRestart, nullptr},
    SchemaField{"quota_store.connect_timeout", kRestart, nullptr},
    SchemaField{"quota_store.pool", kRestart, nullptr},
    SchemaField{"quota_store.failure", kRestart, nullptr},
    SchemaField{"failure", kReloads, nullptr},
    SchemaField{"policy", kReloads, nullptr},
    SchemaField{"headers", kReloads, nullptr},
    SchemaField{"client.trusted_proxies", kReloads, nullptr},
    SchemaField{"client.forwarding_header", kReloads, nullptr},
    SchemaField{"client.api_key_header", kReloads, nullptr},
    SchemaField{"client.tenant_header", kReloads, nullptr},
    SchemaField{"tenants", kReloads, nullptr},
    SchemaField{"rules[].name", kReloads, nullptr},
    SchemaField{"rules[].key", kReloads, nullptr},
    SchemaField{"rules[].bucket", kReloads, nullptr},
    SchemaField{"rules[].capacity", kReloads, nullptr},
    SchemaField{"rules[].tokens", kReloads, nullptr},
    SchemaField{"rules[].period", kReloads, nullptr},
    SchemaField{"rules[].cost", kReloads, nullptr},
    SchemaField{"rules[].cost_from.response_header", kReloads, nullptr},
    SchemaField{"rules[].shadow", kReloads, nullptr},
    SchemaField{"rules[].match.methods", kReloads, nullptr},
    SchemaField{"rules[].match.path_prefix", kReloads, nullptr},
    SchemaField{"rules[].overrides.*.capacity", kReloads, nullptr},
    SchemaField{"rules[].overrides.*.tokens", kReloads, nullptr},
    SchemaField{"rules[].overrides.*.period", kReloads, nullptr},
    SchemaField{"rules[].wait.replicas", kReloads, nullptr},
    SchemaField{"rules[].wait.timeout", kReloads, nullptr},
    SchemaField{"rules[].algorithm", kReloads, nullptr},
    SchemaField{"rules[].counting", kReloads, nullptr},
    SchemaField{"rules[].sync_interval", kReloads, nullptr},
    SchemaField{"rules[].lease.max_fraction", kReloads, nullptr},
    SchemaField{"rules[].lease.ttl", kReloads, nullptr},
    SchemaField{"rules[].durable", kReloads, nullptr},
    SchemaField{"key_prefix", kReloads, nullptr},
    SchemaField{"hash_tag_values", kReloads, nullptr},
    SchemaField{"over_limit_cache.max_keys", kReloads, nullptr},
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
    SchemaField{"rls.response_headers.limit", kReloads, nullptr},
    SchemaField{"rls.response_headers.remaining", kReloads, nullptr},
    SchemaField{"rls.response_headers.reset", kReloads, nullptr},
    SchemaField{"rls.policy", kReloads, nullptr},
    SchemaField{"rls.over_limit_cache.max_keys", kReloads, nullptr},
    SchemaField{"rls.quota_mode", kReloads, nullptr},
    SchemaField{"rls.near_limit_ratio", kReloads, nullptr},
    SchemaField{"rls.max_message_bytes", kRestart,
                &SameInOptional<&Config::rls, &RlsConfig::max_message_bytes>},
    SchemaField{"rls.max_concurrent_streams", kRestart,
                &SameInOptional<&Config::rls, &RlsConfig::max_concurrent_streams>},
    SchemaField{"rls.max_calls_in_flight", kReloads, nullptr},
    SchemaField{"rls.keepalive.time", kRestart, &SameKeepalive<&RlsKeepalive::time>},
    SchemaField{"rls.keepalive.timeout", kRestart, &SameKeepalive<&RlsKeepalive::timeout>},
    SchemaField{"rls.keepalive.min_client_ping_interval", kRestart,
                &SameKeepalive<&RlsKeepalive::min_client_ping_interval>},
    SchemaField{"rls.keepalive.max_connection_age", kRestart,
                &SameKeepalive<&RlsKeepalive::max_connection_age>},
    SchemaField{"rls.keepalive.max_connection_age_grace", kRestart,
                &SameKeepalive<&RlsKeepalive::max_connection_age_grace>},
};

// Whether the dotted `path` is a field of `section` ("store.tls.verify" of "store" and of
// "store.tls").
bool IsBelow(std::string_view path, std::string_view section) {
  return path.size() > section.size() && path.starts_with(section) && path[section.size()] == '.';
}

// The sections whose fields are compared by their text as written: one field can set several
// options (a store's url: its host, port, database, TLS and credentials), and which fields a
// section takes depends on its type. Each is compared whole first, so that the same options
// written otherwise need no restart.
struct TextSection {
  std::string_view path;
  bool (*same)(const Config& a, const Config& b);
};
constexpr std::array kTextSections{
    TextSection{"store", &Same<&Config::store>},
    TextSection{"quota_store", &Same<&Config::quota_store>},
};

const TextSection* TextSectionOf(std::string_view path) {
  for (const TextSection& section : kTextSections) {
    if (IsBelow(path, section.path)) return &section;
  }
  return nullptr;
}

std::string_view TextOf(const Config& config, std::string_view path) {
  auto it = config.field_texts.find(path);
  return it == config.field_texts.end() ? std::string_view() : std::string_view(it->second);
}

bool Same(const SchemaField& field, const Config& a, const Config& b) {
  if (field.same != nullptr) return field.same(a, b);
  const TextSection* section = TextSectionOf(field.path);
  return section == nullptr || section->same(a, b) ||
         TextOf(a, field.path) == TextOf(b, field.path);
}

}  // namespace

std::span<const SchemaField> Schema() { return kSchema; }

bool ComparedByText(const SchemaField& field) {
  return field.same == nullptr && TextSectionOf(field.path) != nullptr;
}

std::vector<std::string_view> KeysOf(std::string_view section) {
  std::vector<std::string_view> keys;
  for (const SchemaField& field : kSchema) {
    std::string_view path = field.path;
    if (!section.empty()) {
      if (!IsBelow(path, section)) continue;
      path.remove_prefix(section.size() + 1);
    }
    const std::string_view key = path.substr(0, path.find_first_of(".["));
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  return keys;
}

std::optional<std::string_view> FirstRestartField(const Config& running, const Config& next) {
  for (const SchemaField& field : kSchema) {
    if (field.on_reload == kRestart && !Same(field, running, next)) return field.path;
  }
  // Options that differ with every field's text alike (an environment variable the file names
  // expanded otherwise): the section as a whole.
  for (const TextSection& section : kTextSections) {
    if (!section.same(running, next)) return section.path;
  }
  return std::nullopt;
}

}  // namespace sluice::config
