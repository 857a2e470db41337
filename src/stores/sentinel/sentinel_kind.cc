// `store: {type: sentinel, sentinels: [...], master: NAME}`: the master the sentinels name,
// followed through failovers.
#include "sluice/redis_options.h"
#include "stores/redis/redis_kind.h"

namespace sluice::stores {
namespace {

std::shared_ptr<const StoreSettings> ParseSentinel(const config::YamlField& f) {
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
  return std::make_shared<RedisSettings>(std::move(redis));
}

// sentinel://[[user]:password@]host:port[,host:port...]/MASTER[?db=N], as fields: the
// credentials in the URL are the master's.
Result<YAML::Node> SentinelFields(std::string_view url) {
  Result<RedisOptions> parsed = ParseRedisUrl(url);
  if (!parsed.ok()) return parsed.status();
  YAML::Node fields;
  for (const auto& [host, port] : parsed->sentinel->sentinels) {
    fields["sentinels"].push_back(host + ":" + std::to_string(port));
  }
  fields["master"] = parsed->sentinel->master;
  fields["db"] = parsed->db;
  if (!parsed->username.empty()) fields["username"] = parsed->username;
  if (!parsed->password.empty()) fields["password"] = parsed->password;
  return fields;
}

}  // namespace

StoreKind SentinelStoreKind() {
  return {.type = "sentinel",
          .fields = {"sentinels", "master", "db", "username", "password", "password_file",
                     "sentinel_username", "sentinel_password", "sentinel_password_file", "tls",
                     "mode", "layout", "timeout", "connect_timeout", "max_in_flight"},
          .parse = ParseSentinel,
          .url_schemes = {"sentinel://"},
          .url_fields = SentinelFields};
}

}  // namespace sluice::stores
