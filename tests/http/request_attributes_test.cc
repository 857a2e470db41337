#include "http/request_attributes.h"

#include <gtest/gtest.h>

#include <map>

namespace sluice::http {
namespace {

config::Config MakeConfig() {
  auto c = config::ParseConfig(
      "upstream: {address: 127.0.0.1:9000}\n"
      "client: {api_key_header: X-Api-Key, tenant_header: X-Tenant-Id}\n"
      "tenants: {ak_abc123: org_acme}\n"
      "rules:\n"
      "  - {name: per-ip, key: ip, capacity: 10, period: 1s}\n"
      "  - {name: per-client, key: 'header:X-Client-Id', capacity: 10, period: 1s}\n",
      "test.yaml");
  EXPECT_TRUE(c.ok()) << c.status().message();
  return *c;
}

Request Build(const std::map<std::string, std::string>& headers) {
  return RequestAttributes(MakeConfig(), "203.0.113.42", "GET", "/api/x",
                           [&](std::string_view name) -> std::optional<std::string_view> {
                             auto it = headers.find(std::string(name));
                             if (it == headers.end()) return std::nullopt;
                             return it->second;
                           });
}

TEST(RequestAttributesTest, TenantFromTheKeysMap) {
  Request r = Build({{"X-Api-Key", "ak_abc123"}, {"X-Tenant-Id", "org_other"}});
  EXPECT_EQ(*r.Find("ip"), "203.0.113.42");
  EXPECT_EQ(*r.Find("key"), "ak_abc123");
  EXPECT_EQ(*r.Find("tenant"), "org_acme");  // the map wins over the header
  EXPECT_EQ(r.method(), "GET");
  EXPECT_EQ(r.path(), "/api/x");
}

TEST(RequestAttributesTest, TenantFromTheHeaderWhenTheKeyIsUnmapped) {
  Request r = Build({{"X-Api-Key", "ak_unknown"}, {"X-Tenant-Id", "org_other"}});
  EXPECT_EQ(*r.Find("tenant"), "org_other");
}

TEST(RequestAttributesTest, AbsentOrEmptyHeadersSetNothing) {
  Request r = Build({{"X-Api-Key", ""}});
  EXPECT_EQ(r.Find("key"), nullptr);
  EXPECT_EQ(r.Find("tenant"), nullptr);
  EXPECT_EQ(r.Find("header:X-Client-Id"), nullptr);
  EXPECT_EQ(*Build({{"X-Client-Id", "c1"}}).Find("header:X-Client-Id"), "c1");
}

}  // namespace
}  // namespace sluice::http
