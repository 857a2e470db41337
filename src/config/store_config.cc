#include "config/store_config.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "config/schema.h"

namespace sluice::config {
namespace {

// The store fields each type takes, beside `type` (every field is in the schema, schema.cc).
struct StoreFields {
  const char* type;
  std::vector<std::string_view> fields;
};
const StoreFields kStoreFields[] = {
    {"memory", {"max_buckets"}},
    {"redis",
     {"url", "username", "password", "password_file", "tls", "mode", "layout", "timeout",
      "connect_timeout", "max_in_flight", "max_buckets"}},
    {"sentinel",
     {"sentinels", "master", "db", "username", "password", "password_file", "sentinel_username",
      "sentinel_password", "sentinel_password_file", "tls", "mode", "layout", "timeout",
      "connect_timeout", "max_in_flight", "max_buckets"}},
    {"cluster",
     {"nodes", "username", "password", "password_file", "tls", "mode", "layout", "timeout",
      "connect_timeout", "max_in_flight", "refresh_interval", "max_buckets"}},
};

// Refuses a field that `type` does not take, naming the types that do.
void RefuseForeignFields(const YamlField& f, std::string_view type) {
  for (std::string_view field : KeysOf("store")) {
    const std::string name(field);
    if (field == "type" || !f.Has(name)) continue;
    std::vector<std::string> takers;
    for (const StoreFields& kind : kStoreFields) {
      if (std::find(kind.fields.begin(), kind.fields.end(), field) != kind.fields.end()) {
        takers.emplace_back(kind.type);
      }
    }
    if (std::find(takers.begin(), takers.end(), type) != takers.end()) continue;
    std::string list;
    for (size_t i = 0; i < takers.size(); ++i) {
      list += (i == 0 ? "" : i + 1 == takers.size() ? " or " : ", ") + takers[i];
    }
    f[name].Fail("applies only to a " + list + " store");
  }
}

TlsOptions ParseTls(const YamlField& f) {
  TlsOptions tls;
  if (f.node().IsNull()) return tls;  // `tls:` alone: TLS with the defaults
  f.ExpectMap(KeysOf("store.tls"));
  if (f.Has("ca_file")) tls.ca_file = f["ca_file"].String();
  if (f.Has("cert_file")) tls.cert_file = f["cert_file"].String();
  if (f.Has("key_file")) tls.key_file = f["key_file"].String();
  if (f.Has("server_name")) tls.server_name = f["server_name"].String();
  if (f.Has("verify")) tls.verify = f["verify"].Bool();
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    f[tls.cert_file.empty() ? "key_file" : "cert_file"].Fail("cert_file and key_file go together");
  }
  return tls;
}

// `username`, and `password` or `password_file` (never both, and never beside credentials in
// the URL: one source for each, so that none silently wins).
void ParseCredentials(const YamlField& f, const char* prefix, std::string& username,
                      std::string& password, std::string& password_file) {
  const std::string user_field = std::string(prefix) + "username";
  const std::string password_field = std::string(prefix) + "password";
  const std::string file_field = std::string(prefix) + "password_file";
  if (f.Has(user_field)) {
    if (!username.empty()) f[user_field].Fail("is given twice: in the url and here");
    username = f[user_field].String();
  }
  if (f.Has(password_field) && f.Has(file_field)) {
    f[file_field].Fail("is given beside " + password_field + "; give one of them");
  }
  for (const std::string& field : {password_field, file_field}) {
    if (f.Has(field) && !password.empty()) f[field].Fail("is given twice: in the url and here");
  }
  if (f.Has(password_field)) password = f[password_field].String();
  if (f.Has(file_field)) {
    password_file = f[file_field].String();
    if (password_file.empty()) f[file_field].Fail("must name a file");
  }
}

// The fields every store on Redis shares.
template <typename Options>
void ParseTimings(const YamlField& f, Options& options) {
  if (f.Has("mode")) options.mode = f["mode"].Require(ParseScriptMode(f["mode"].String()));
  if (f.Has("layout")) {
    options.layout = f["layout"].OneOf({"hash", "compact"}) == "compact" ? BucketLayout::kCompact
                                                                         : BucketLayout::kHash;
  }
  if (f.Has("timeout")) options.timeout = f["timeout"].Duration();
  if (f.Has("connect_timeout")) options.connect_timeout = f["connect_timeout"].Duration();
  if (f.Has("max_in_flight")) {
    options.max_in_flight = static_cast<size_t>(f["max_in_flight"].Integer(1, 10'000'000));
  }
  if (options.timeout.count() == 0) f["timeout"].Fail("must be more than 0");
  if (options.connect_timeout.count() == 0) f["connect_timeout"].Fail("must be more than 0");
}

std::vector<HostPort> ParseAddresses(const YamlField& f, const char* what) {
  std::vector<HostPort> addresses;
  f.ForEach([&](const YamlField& node) {
    addresses.push_back(node.Require(ParseHostPort(node.String())));
  });
  if (addresses.empty()) f.Fail(std::string("needs at least one ") + what + " (host:port)");
  return addresses;
}

ClusterOptions ParseCluster(const YamlField& f) {
  if (!f.Has("nodes")) f.Fail("a cluster store needs nodes: [host:port, ...]");
  ClusterOptions cluster;
  cluster.seeds = ParseAddresses(f["nodes"], "node");
  ParseCredentials(f, "", cluster.username, cluster.password, cluster.password_file);
  if (f.Has("tls")) cluster.tls = ParseTls(f["tls"]);
  ParseTimings(f, cluster);
  if (f.Has("refresh_interval")) cluster.refresh_interval = f["refresh_interval"].Duration();
  if (cluster.refresh_interval.count() == 0) f["refresh_interval"].Fail("must be more than 0");
  return cluster;
}

RedisOptions ParseRedis(const YamlField& f) {
  if (!f.Has("url")) {
    f.Fail("a redis store needs a url (redis://, rediss:// or unix://; see docs/configuration.md)");
  }
  const YamlField url = f["url"];
  RedisOptions redis = url.Require(ParseRedisUrl(url.String()));
  if (redis.sentinel) url.Fail("a sentinel:// URL goes with type: sentinel");
  ParseCredentials(f, "", redis.username, redis.password, redis.password_file);
  if (f.Has("tls")) {
    if (!redis.tls) f["tls"].Fail("applies to rediss:// URLs (TLS); this url is not one");
    redis.tls = ParseTls(f["tls"]);
  }
  ParseTimings(f, redis);
  return redis;
}

RedisOptions ParseSentinel(const YamlField& f) {
  for (const char* required : {"sentinels", "master"}) {
    if (!f.Has(required)) f.Fail(std::string("a sentinel store needs ") + required);
  }
  RedisOptions redis;
  SentinelOptions sentinel;
  sentinel.sentinels = ParseAddresses(f["sentinels"], "sentinel");
  sentinel.master = f["master"].String();
  if (sentinel.master.empty()) f["master"].Fail("must not be empty");
  if (f.Has("db")) redis.db = static_cast<int>(f["db"].Integer(0, 1'000'000));
  ParseCredentials(f, "", redis.username, redis.password, redis.password_file);
  ParseCredentials(f, "sentinel_", sentinel.username, sentinel.password, sentinel.password_file);
  if (f.Has("tls")) redis.tls = ParseTls(f["tls"]);
  ParseTimings(f, redis);
  redis.sentinel = std::move(sentinel);
  return redis;
}

}  // namespace

StoreConfig ParseStore(const YamlField& f) {
  f.ExpectMap(KeysOf("store"));
  StoreConfig store;
  const std::string type =
      f.Has("type") ? f["type"].OneOf({"memory", "redis", "sentinel", "cluster"}) : "memory";
  RefuseForeignFields(f, type);
  if (f.Has("max_buckets")) {
    store.max_buckets = static_cast<size_t>(f["max_buckets"].Integer(1, 1'000'000'000));
  }
  if (type == "cluster") {
    store.type = StoreType::kCluster;
    store.cluster = ParseCluster(f);
  } else if (type == "redis") {
    store.type = StoreType::kRedis;
    store.redis = ParseRedis(f);
  } else if (type == "sentinel") {
    store.type = StoreType::kSentinel;
    store.redis = ParseSentinel(f);
  }
  return store;
}

std::chrono::milliseconds StoreTimeout(const StoreConfig& store) {
  switch (store.type) {
    case StoreType::kRedis:
    case StoreType::kSentinel:
      return store.redis.timeout;
    case StoreType::kCluster:
      return store.cluster.timeout;
    case StoreType::kMemory:
      break;
  }
  return std::chrono::milliseconds(0);
}

}  // namespace sluice::config
