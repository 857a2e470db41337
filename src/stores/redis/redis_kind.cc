// `store: {type: redis, url: ...}`: one Redis server, by TCP, TLS or a Unix socket.
#include "stores/redis/redis_kind.h"

#include "sluice/redis_store.h"

namespace sluice::stores {

std::string RedisSettings::Kind() const { return options().sentinel ? "redis sentinel" : "redis"; }

void RedisSettings::StatusJson(nlohmann::json& out) const {
  out["address"] = options().Describe();  // never a credential
  out["db"] = options().db;
  RedisFamilySettings::StatusJson(out);
}

std::string RedisSettings::Address() const { return options().Describe(); }

namespace {

std::shared_ptr<const StoreSettings> ParseRedis(const config::YamlField& f) {
  if (!f.Has("url")) {
    f.Fail("a redis store needs a url (redis://, rediss:// or unix://; see docs/configuration.md)");
  }
  const config::YamlField url = f["url"];
  RedisOptions redis = url.Require(ParseRedisUrl(url.String()));
  if (redis.sentinel) url.Fail("a sentinel:// URL goes with type: sentinel");
  ParseCredentials(f, "", redis.username, redis.password, redis.password_file);
  if (f.Has("tls")) {
    if (!redis.tls) f["tls"].Fail("applies to rediss:// URLs (TLS); this url is not one");
    redis.tls = ParseTls(f["tls"]);
  }
  ParseTimings(f, redis);
  return std::make_shared<RedisSettings>(std::move(redis));
}

}  // namespace

StoreKind RedisStoreKind() {
  return {.type = "redis",
          .fields = {"url", "username", "password", "password_file", "tls", "mode", "layout",
                     "timeout", "connect_timeout", "max_in_flight"},
          .parse = ParseRedis,
          .url_schemes = {"redis://", "rediss://", "unix://"},
          .url_fields = [](std::string_view url) -> Result<YAML::Node> {
            YAML::Node fields;
            fields["url"] = std::string(url);
            return fields;
          }};
}

}  // namespace sluice::stores
