// The `rls:` block of the configuration file.
#include <gtest/gtest.h>

#include "config/config.h"

namespace sluice::config {
namespace {

Config Parse(const std::string& yaml) {
  Result<Config> config = ParseConfig(yaml, "/etc/sluice/sluice.yaml");
  EXPECT_TRUE(config.ok()) << config.status().message();
  return config.ok() ? *config : Config{};
}

std::string Refusal(const std::string& yaml) {
  Result<Config> config = ParseConfig(yaml, "/etc/sluice/sluice.yaml");
  EXPECT_FALSE(config.ok()) << yaml;
  return config.status().message();
}

TEST(RlsConfigTest, ARateLimitServiceAloneNeedsNoUpstreamNorRules) {
  Config config = Parse(
      "failure: closed\nrls:\n  listen: 127.0.0.1:8081\n  config: [ratelimit/, /abs/d.yaml]\n");
  EXPECT_FALSE(config.proxy);
  EXPECT_TRUE(config.rules.empty());
  ASSERT_TRUE(config.rls);
  EXPECT_EQ(config.rls->listen, (Endpoint{"127.0.0.1", 8081}));
  EXPECT_FALSE(config.rls->json_listen);
  EXPECT_EQ(config.rls->config,
            (std::vector<std::string>{"/etc/sluice/ratelimit/", "/abs/d.yaml"}));
  EXPECT_EQ(config.rls->failure, RlsFailure::kClosed);  // the top-level failure
  EXPECT_FALSE(config.rls->response_headers);
}

TEST(RlsConfigTest, BesideTheGateway) {
  Config config = Parse(
      "upstream: {address: 127.0.0.1:9000}\nrules: []\nrls:\n  json_listen: 127.0.0.1:8082\n"
      "  config: [d]\n  failure: error\n  response_headers: {reset: X-Reset}\n");
  EXPECT_TRUE(config.proxy);
  EXPECT_EQ(config.rls->failure, RlsFailure::kError);
  ASSERT_TRUE(config.rls->response_headers);
  EXPECT_EQ(config.rls->response_headers->limit, "RateLimit-Limit");
  EXPECT_EQ(config.rls->response_headers->reset, "X-Reset");
}

TEST(RlsConfigTest, ItsOwnPolicyOverLimitCacheAndQuotaMode) {
  Config config = Parse("policy: refund\nrls:\n  listen: 127.0.0.1:8081\n  config: [d]\n");
  EXPECT_EQ(config.rls->policy, MultiRulePolicy::kChargeAll);  // not the gateway's
  EXPECT_EQ(config.rls->over_limit_cache_keys, 0U);
  EXPECT_FALSE(config.rls->quota_mode);
  config = Parse(
      "rls:\n  listen: 127.0.0.1:8081\n  config: [d]\n  policy: all-or-nothing\n"
      "  over_limit_cache: {max_keys: 500}\n  quota_mode: true\n");
  EXPECT_EQ(config.rls->policy, MultiRulePolicy::kAllOrNothing);
  EXPECT_EQ(config.rls->over_limit_cache_keys, 500U);
  EXPECT_TRUE(config.rls->quota_mode);
  EXPECT_EQ(Parse("rls: {listen: 127.0.0.1:1, config: [d], over_limit_cache: {}}\n")
                .rls->over_limit_cache_keys,
            100'000U);
  EXPECT_NE(
      Refusal("rls: {listen: 127.0.0.1:1, config: [d], policy: sometimes}\n").find("rls.policy"),
      std::string::npos);
}

TEST(RlsConfigTest, LimitsUnderPressure) {
  Config config = Parse("rls: {listen: 127.0.0.1:1, config: [d]}\n");
  EXPECT_EQ(config.rls->max_message_bytes, 1048576U);
  EXPECT_EQ(config.rls->max_concurrent_streams, 100U);
  EXPECT_EQ(config.rls->max_calls_in_flight, 10'000U);
  EXPECT_EQ(config.rls->keepalive, RlsKeepalive{});
  EXPECT_EQ(config.rls->keepalive.time, std::chrono::seconds(60));
  EXPECT_EQ(config.rls->keepalive.max_connection_age, std::chrono::minutes(30));
  config = Parse(
      "rls:\n  listen: 127.0.0.1:1\n  config: [d]\n  max_message_bytes: 65536\n"
      "  max_concurrent_streams: 8\n  max_calls_in_flight: 50\n"
      "  keepalive: {time: 2s, timeout: 500ms, min_client_ping_interval: 0, "
      "max_connection_age: 0, max_connection_age_grace: 1s}\n");
  EXPECT_EQ(config.rls->max_message_bytes, 65536U);
  EXPECT_EQ(config.rls->max_concurrent_streams, 8U);
  EXPECT_EQ(config.rls->max_calls_in_flight, 50U);
  EXPECT_EQ(config.rls->keepalive.time, std::chrono::seconds(2));
  EXPECT_EQ(config.rls->keepalive.timeout, std::chrono::milliseconds(500));
  EXPECT_EQ(config.rls->keepalive.min_client_ping_interval, std::chrono::milliseconds(0));
  EXPECT_EQ(config.rls->keepalive.max_connection_age, std::chrono::milliseconds(0));
  EXPECT_EQ(config.rls->keepalive.max_connection_age_grace, std::chrono::seconds(1));

  const std::string base = "rls: {listen: 127.0.0.1:1, config: [d], ";
  EXPECT_NE(Refusal(base + "max_message_bytes: 100}\n").find("rls.max_message_bytes"),
            std::string::npos);
  EXPECT_NE(Refusal(base + "max_concurrent_streams: 0}\n").find("rls.max_concurrent_streams"),
            std::string::npos);
  EXPECT_NE(Refusal(base + "max_calls_in_flight: 0}\n").find("rls.max_calls_in_flight"),
            std::string::npos);
  EXPECT_NE(Refusal(base + "keepalive: {time: 0}}\n").find("rls.keepalive.time: must be more"),
            std::string::npos);
  EXPECT_NE(Refusal(base + "keepalive: {timeout: 30d}}\n").find("rls.keepalive.timeout: must be"),
            std::string::npos);
  EXPECT_NE(Refusal(base + "keepalive: {interval: 1s}}\n").find("rls.keepalive.interval: unknown"),
            std::string::npos);
}

TEST(RlsConfigTest, RefusesWhatCannotWork) {
  EXPECT_NE(Refusal("rules: []\n").find("needs an upstream"), std::string::npos);
  EXPECT_NE(Refusal("listen: 127.0.0.1:8080\nrls: {listen: 127.0.0.1:1, config: [d]}\n")
                .find("listen: needs an upstream to forward to"),
            std::string::npos);
  EXPECT_NE(Refusal("rls: {config: [d]}\n").find("needs listen, json_listen or both"),
            std::string::npos);
  EXPECT_NE(Refusal("rls: {listen: 127.0.0.1:1}\n").find("needs config"), std::string::npos);
  EXPECT_NE(Refusal("rls: {listen: 127.0.0.1:1, config: []}\n").find("at least one"),
            std::string::npos);
  EXPECT_NE(Refusal("rls: {listen: 127.0.0.1:1, config: [d], failure: maybe}\n")
                .find("rls.failure: \"maybe\" is not one of open | closed | error"),
            std::string::npos);
  EXPECT_NE(
      Refusal("rls: {listen: 127.0.0.1:1, config: [d], port: 1}\n").find("rls.port: unknown field"),
      std::string::npos);
  EXPECT_NE(Refusal("rls: {listen: 127.0.0.1:1, config: [d], response_headers: {limt: X}}\n")
                .find("rls.response_headers.limt: unknown field"),
            std::string::npos);
}

}  // namespace
}  // namespace sluice::config
