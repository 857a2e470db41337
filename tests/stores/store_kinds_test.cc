// The registry of store kinds: every kind's fields are the schema's, a `--store` URL finds its
// kind, and each kind's settings say what the rest of Sluice asks of them.
#include "stores/store_kind.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/schema.h"
#include "stores/quota_store_kind.h"

namespace sluice::stores {
namespace {

bool Has(const std::vector<std::string_view>& list, std::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

Result<config::StoreConfig> Parse(const std::string& store) {
  Result<config::Config> c = config::ParseConfig(
      "upstream: {address: 127.0.0.1:9000}\nrules: []\nstore: " + store + "\n", "sluice.yaml");
  if (!c.ok()) return c.status();
  return c->store;
}

// Every field of each of `kinds` is one of `section`'s in the schema, and every field of the
// section but `common` (taken by the section itself) is some kind's.
template <typename Kind>
void ExpectTheSchemasFields(const std::vector<Kind>& kinds, const char* section,
                            std::string_view common) {
  const std::vector<std::string_view> schema = config::KeysOf(section);
  for (const Kind& kind : kinds) {
    for (std::string_view field : kind.fields) {
      EXPECT_TRUE(Has(schema, field)) << kind.type << " takes " << field;
    }
  }
  for (std::string_view field : schema) {
    if (field == "type" || field == common) continue;
    EXPECT_TRUE(std::any_of(kinds.begin(), kinds.end(),
                            [&](const Kind& k) { return Has(k.fields, field); }))
        << "no kind takes " << section << "." << field;
  }
}

TEST(StoreKindsTest, EveryFieldOfAKindIsInTheSchemaAndEverySchemaFieldHasAKind) {
  ExpectTheSchemasFields(StoreKinds(), "store", "max_buckets");
  for (const StoreKind& kind : StoreKinds()) EXPECT_EQ(FindStoreKind(kind.type), &kind);
  EXPECT_EQ(StoreKinds().front().type, "memory");  // the default
  EXPECT_EQ(FindStoreKind("mysql"), nullptr);
}

TEST(StoreKindsTest, AStoreUrlFindsItsKind) {
  const std::pair<const char*, const char*> urls[] = {
      {"memory", "memory"},
      {"redis://127.0.0.1:6379", "redis"},
      {"rediss://redis.internal:6380", "redis"},
      {"unix:///run/redis.sock", "redis"},
      {"sentinel://10.0.0.1:26379/mymaster", "sentinel"},
      {"cluster://127.0.0.1:7001,127.0.0.1:7002", "cluster"}};
  for (const auto& [url, type] : urls) {
    const StoreKind* kind = StoreKindForUrl(url);
    ASSERT_NE(kind, nullptr) << url;
    EXPECT_EQ(kind->type, type) << url;
  }
  EXPECT_EQ(StoreKindForUrl("memcached://127.0.0.1:11211"), nullptr);
  EXPECT_EQ(StoreKindForUrl("memoryx"), nullptr);
}

// What a URL stands for reads as the same fields written out would.
TEST(StoreKindsTest, AUrlsFieldsAreTheFieldsItStandsFor) {
  const StoreKind* sentinel = StoreKindForUrl("sentinel://");
  ASSERT_NE(sentinel, nullptr);
  Result<YAML::Node> fields = sentinel->url_fields("sentinel://:pw@10.0.0.1:26379,h:26380/m?db=2");
  ASSERT_TRUE(fields.ok()) << fields.status().message();
  EXPECT_EQ((*fields)["master"].as<std::string>(), "m");
  EXPECT_EQ((*fields)["db"].as<int>(), 2);
  EXPECT_EQ((*fields)["password"].as<std::string>(), "pw");
  EXPECT_EQ((*fields)["sentinels"].size(), 2u);
  EXPECT_FALSE(sentinel->url_fields("sentinel://10.0.0.1:26379").ok());  // no master

  const StoreKind* cluster = StoreKindForUrl("cluster://");
  ASSERT_NE(cluster, nullptr);
  Result<YAML::Node> nodes = cluster->url_fields("cluster://a:7001,b:7002");
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ((*nodes)["nodes"][1].as<std::string>(), "b:7002");
}

TEST(StoreKindsTest, EachKindsSettingsAnswerForIt) {
  struct Expected {
    const char* store;
    const char* kind;
    int64_t timeout_ms;
    bool replicas;
  };
  const Expected cases[] = {
      {"{type: memory}", "memory", 0, false},
      {"{type: redis, url: 'redis://r:6379', timeout: 30ms}", "redis", 30, true},
      {"{type: sentinel, sentinels: ['s:26379'], master: m}", "redis sentinel", 50, true},
      {"{type: cluster, nodes: ['c:7001'], timeout: 70ms}", "redis cluster", 70, true}};
  for (const Expected& e : cases) {
    Result<config::StoreConfig> store = Parse(e.store);
    ASSERT_TRUE(store.ok()) << store.status().message();
    EXPECT_EQ(store->settings->Kind(), e.kind);
    EXPECT_EQ(store->settings->Timeout().count(), e.timeout_ms) << e.store;
    EXPECT_EQ(store->settings->HasReplicas(), e.replicas) << e.store;
    EXPECT_TRUE(store->settings->CheckCredentials().ok()) << e.store;
  }
}

TEST(StoreKindsTest, SettingsAreEqualOnlyOfOneKindWithTheSameFields) {
  Result<config::StoreConfig> a = Parse("{type: redis, url: 'redis://r:6379'}");
  Result<config::StoreConfig> same = Parse("{type: redis, url: 'redis://r:6379'}");
  Result<config::StoreConfig> other = Parse("{type: redis, url: 'redis://r:6380'}");
  Result<config::StoreConfig> memory = Parse("{type: memory}");
  ASSERT_TRUE(a.ok() && same.ok() && other.ok() && memory.ok());
  EXPECT_EQ(*a, *same);
  EXPECT_FALSE(*a == *other);
  EXPECT_FALSE(*a == *memory);
  EXPECT_FALSE(*memory == *a);
  EXPECT_EQ(*memory, config::StoreConfig());  // no `store:` is the memory store
}

TEST(StoreKindsTest, TheStatusNeverCarriesAPassword) {
  Result<config::StoreConfig> store = Parse("{type: redis, url: 'redis://:s3cret@r:6379'}");
  ASSERT_TRUE(store.ok()) << store.status().message();
  nlohmann::json out;
  store->settings->StatusJson(out);
  EXPECT_EQ(out["password"], "(set)");
  EXPECT_EQ(out.dump().find("s3cret"), std::string::npos) << out.dump();
}

TEST(StoreKindsTest, AFieldOfAnotherKindIsRefusedNamingTheKindsThatTakeIt) {
  Result<config::StoreConfig> store = Parse("{type: memory, refresh_interval: 1s}");
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("applies only to a cluster store"), std::string::npos)
      << store.status().message();
  Result<config::StoreConfig> tls = Parse("{type: memory, tls: {}}");
  ASSERT_FALSE(tls.ok());
  EXPECT_NE(tls.status().message().find("applies only to a redis, sentinel or cluster store"),
            std::string::npos)
      << tls.status().message();
  Result<config::StoreConfig> unknown = Parse("{type: mysql}");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("memory | redis | sentinel | cluster"),
            std::string::npos)
      << unknown.status().message();
}

TEST(QuotaStoreKindsTest, EveryFieldOfAKindIsInTheSchemaAndAUrlFindsItsKind) {
  ExpectTheSchemasFields(QuotaStoreKinds(), "quota_store", "failure");
  for (const QuotaStoreKind& kind : QuotaStoreKinds()) {
    EXPECT_EQ(FindQuotaStoreKind(kind.type), &kind);
  }
  ASSERT_NE(QuotaStoreKindForUrl("postgresql://sluice@db/sluice"), nullptr);
  EXPECT_EQ(QuotaStoreKindForUrl("postgres://db/sluice")->type, "postgres");
  EXPECT_EQ(QuotaStoreKindForUrl("mysql://db/sluice"), nullptr);
}

TEST(QuotaStoreKindsTest, SettingsAreEqualWithTheSameFieldsAndDescribeNoPassword) {
  auto quota = [](const std::string& fields) {
    return config::ParseConfig(
        "upstream: {address: 127.0.0.1:9000}\nrules: []\nquota_store: " + fields + "\n",
        "sluice.yaml");
  };
  Result<config::Config> a = quota("{type: postgres, url: 'postgresql://u:s3cret@db/q'}");
  Result<config::Config> same = quota("{type: postgres, url: 'postgresql://u:s3cret@db/q'}");
  Result<config::Config> other =
      quota("{type: postgres, url: 'postgresql://u:s3cret@db/q', pool: 2}");
  ASSERT_TRUE(a.ok() && same.ok() && other.ok()) << a.status().message();
  EXPECT_EQ(*a->quota_store, *same->quota_store);
  EXPECT_FALSE(*a->quota_store == *other->quota_store);
  EXPECT_EQ(a->quota_store->settings->Describe().find("s3cret"), std::string::npos);
}

}  // namespace
}  // namespace sluice::stores
