// Envoy's rate limit service driven in process, without a gRPC server or a socket: requests in,
// responses out, on the memory store (or a store that fails or holds its answers), in
// milliseconds. rls_service_test.cc keeps what needs a real `sluice serve`: gRPC and HTTP/2, the
// health service, signals, Redis.

#include "rls/service.h"

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/asio/use_future.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rls/descriptor_files.h"
#include "rls/front_end.h"
#include "rls/json_handler.h"
#include "rls/rate_limit_requests.h"
#include "sluice/clock.h"
#include "sluice/memory_store.h"
#include "support/fake_store.h"
#include "support/manual_clock.h"

namespace sluice::rls {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;

class RlsServiceInProcessTest : public ::testing::Test {
 protected:
  RlsServiceInProcessTest() { Configure({}); }

  void Configure(ServiceOptions options) {
    options.response_headers = config::RlsHeaderNames{};
    service_ = std::make_unique<Service>(std::vector<std::shared_ptr<Store>>{store_},
                                         MatcherOf({kDescriptors}), std::move(options));
  }

  // The answer to `request`, which the service gives inline on these stores unless they hold it.
  std::optional<Result<RateLimitResponse>> Answer(const RateLimitRequest& request) {
    std::optional<Result<RateLimitResponse>> answer;
    service_->ShouldRateLimit(request, [&](Result<RateLimitResponse> r) { answer = std::move(r); });
    return answer;
  }

  RateLimitResponse Ok(const RateLimitRequest& request) {
    std::optional<Result<RateLimitResponse>> answer = Answer(request);
    EXPECT_TRUE(answer && answer->ok()) << (answer ? answer->status().ToString() : "no answer");
    return answer && answer->ok() ? **answer : RateLimitResponse{};
  }

  // The overall codes of `n` calls of `request`: + for OK, x for OVER_LIMIT.
  std::string Codes(const RateLimitRequest& request, int n) {
    std::string codes;
    for (int i = 0; i < n; ++i) {
      codes += Ok(request).overall_code() == RateLimitResponse::OK ? "+" : "x";
    }
    return codes;
  }

  // POST /json (or `method` `target`) answered by the JSON handler, on an event loop of the test's.
  http::HttpResponse Json(const std::string& body,
                          beast::http::verb method = beast::http::verb::post,
                          const std::string& target = "/json") {
    http::HttpRequest request{method, target, 11};
    request.set(beast::http::field::content_type, "application/json");
    request.body() = body;
    request.prepare_payload();
    asio::io_context io;
    std::future<http::HttpResponse> response = asio::co_spawn(
        io.get_executor(), HandleJson(*service_, std::move(request), 0), asio::use_future);
    io.run();
    return response.get();
  }

  std::shared_ptr<testing::ManualClock> clock_ =
      std::make_shared<testing::ManualClock>(1'764'633'600'000);
  std::shared_ptr<MemoryStore> memory_ = std::make_shared<MemoryStore>(clock_);
  // The memory store, failing or holding its calls when a test says so.
  std::shared_ptr<sluice::testing::FakeStore> store_ =
      std::make_shared<sluice::testing::FakeStore>(memory_);
  std::unique_ptr<Service> service_;
};

RateLimitRequest Request(const std::vector<DescriptorEntries>& descriptors,
                         std::string domain = "edge") {
  return RequestOf(std::move(domain), descriptors);
}

TEST_F(RlsServiceInProcessTest, DescriptorsMatchAtEveryDepthWithWildcardsUnlimitedAndShadow) {
  EXPECT_EQ(Codes(Request({{{"client", "alice"}}}), 4), "+++x");
  EXPECT_EQ(Codes(Request({{{"client", "bob"}}}), 1), "+");  // per value
  EXPECT_EQ(Codes(Request({{{"client", "vip"}}}), 6), "+++++x");
  EXPECT_EQ(Codes(Request({{{"client", "bot-1"}}}), 2), "+x");
  EXPECT_EQ(Codes(Request({{{"client", "bot-2"}}}), 2), "+x");
  EXPECT_EQ(Codes(Request({{{"client", "internal"}}}), 10), "++++++++++");
  EXPECT_EQ(Codes(Request({{{"route", "/api"}, {"method", "GET"}}}), 3), "++x");
  EXPECT_EQ(Codes(Request({{{"route", "/api"}, {"method", "PUT"}}}), 1), "+");
  EXPECT_EQ(Codes(Request({{{"route", "/api"}}}), 5), "+++++");  // no limit at depth 1
  EXPECT_EQ(Codes(Request({{{"canary", "c"}}}), 3), "+++");      // shadow: never over

  RateLimitResponse unlimited = Ok(Request({{{"client", "internal"}}}));
  EXPECT_EQ(unlimited.statuses(0).limit_remaining(), UINT32_MAX);
  RateLimitResponse unknown = Ok(Request({{{"client", "alice"}}}, "no-such-domain"));
  EXPECT_EQ(unknown.overall_code(), RateLimitResponse::OK);
  EXPECT_FALSE(unknown.statuses(0).has_current_limit());
}

TEST_F(RlsServiceInProcessTest, SeveralDescriptorsAndHitsAddendInOneCall) {
  RateLimitRequest request =
      Request({{{"client", "carol"}}, {{"route", "/api"}, {"method", "POST"}}, {{"other", "x"}}});
  request.set_hits_addend(2);
  request.mutable_descriptors(1)->mutable_hits_addend()->set_value(0);  // look only
  RateLimitResponse first = Ok(request);
  ASSERT_EQ(first.statuses_size(), 3);
  EXPECT_EQ(first.overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(first.statuses(0).limit_remaining(), 1U);
  EXPECT_EQ(first.statuses(0).current_limit().requests_per_unit(), 3U);
  EXPECT_EQ(first.statuses(0).current_limit().unit(), RateLimitResponse::RateLimit::MINUTE);
  EXPECT_GT(first.statuses(0).duration_until_reset().seconds(), 0);
  EXPECT_EQ(first.statuses(1).limit_remaining(), 2U);  // not charged
  EXPECT_FALSE(first.statuses(2).has_current_limit());
  ASSERT_EQ(first.response_headers_to_add_size(), 3);
  EXPECT_EQ(first.response_headers_to_add(0).key(), "RateLimit-Limit");
  EXPECT_EQ(first.response_headers_to_add(0).value(), "3");
  EXPECT_EQ(first.response_headers_to_add(1).value(), "1");

  RateLimitResponse second = Ok(request);
  EXPECT_EQ(second.overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(second.statuses(0).code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(second.statuses(1).code(), RateLimitResponse::OK);
}

// rls.failure decides a call the store cannot answer: OK, OVER_LIMIT, or the store's code with
// nothing of its error text; a call that needs no store is answered either way, and a request
// the store calls invalid is the caller's fault, whatever the setting.
TEST_F(RlsServiceInProcessTest, TheFailureSettingAnswersWhenTheStoreFails) {
  store_->FailWith(Status::Unavailable("redis 10.0.0.7:6379: connection refused"));
  ServiceOptions open;
  open.failure = config::RlsFailure::kOpen;
  Configure(open);
  EXPECT_EQ(Codes(Request({{{"client", "a"}}}), 2), "++");
  ServiceOptions closed;
  closed.failure = config::RlsFailure::kClosed;
  Configure(closed);
  RateLimitResponse denied = Ok(Request({{{"client", "a"}}, {{"nobody", "b"}}}));
  EXPECT_EQ(denied.overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(denied.statuses(1).code(), RateLimitResponse::OK);
  ServiceOptions error;
  error.failure = config::RlsFailure::kError;
  Configure(error);
  std::optional<Result<RateLimitResponse>> refused = Answer(Request({{{"client", "a"}}}));
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(refused->status().message(), "rate limit store unavailable");
  EXPECT_EQ(Ok(Request({{{"nobody", "a"}}})).overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(
      Json(R"({"domain": "edge", "descriptors": [{"entries": [{"key": "client", "value": "j"}]}]})")
          .result(),
      beast::http::status::service_unavailable);
  const std::string metrics = service_->MetricsText();
  EXPECT_NE(metrics.find("sluice_rls_failure_policy_total{decision=\"error\"} 2"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("sluice_rls_store_errors_total{code=\"unavailable\"} 2"),
            std::string::npos)
      << metrics;
  EXPECT_EQ(metrics.find("10.0.0.7"), std::string::npos);

  store_->FailWith(Status::InvalidArgument("cost out of range"));
  refused = Answer(Request({{{"client", "a"}}}));
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status().code(), StatusCode::kInvalidArgument);
}

// A call that needs the store while max_calls_in_flight calls wait for it is refused at once; one
// the store is not needed for is answered.
TEST_F(RlsServiceInProcessTest, CallsPastMaxInFlightAreRefusedAtOnce) {
  ServiceOptions options;
  options.max_calls_in_flight = 2;
  Configure(options);
  store_->Hold(true);
  int answered = 0;
  for (const char* client : {"a", "b"}) {
    service_->ShouldRateLimit(Request({{{"client", client}}}),
                              [&answered](const Result<RateLimitResponse>& r) {
                                EXPECT_TRUE(r.ok());
                                ++answered;
                              });
  }
  EXPECT_EQ(answered, 0);
  EXPECT_EQ(service_->InFlight(), 2U);
  std::optional<Result<RateLimitResponse>> shed = Answer(Request({{{"client", "c"}}}));
  ASSERT_TRUE(shed.has_value());
  EXPECT_EQ(shed->status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(
      Json(R"({"domain": "edge", "descriptors": [{"entries": [{"key": "client", "value": "j"}]}]})")
          .result(),
      beast::http::status::service_unavailable);
  EXPECT_EQ(Ok(Request({{{"nobody", "a"}}})).overall_code(), RateLimitResponse::OK);
  store_->Release();
  EXPECT_EQ(answered, 2);
  EXPECT_EQ(service_->InFlight(), 0U);
  EXPECT_NE(service_->MetricsText().find("sluice_rls_calls_shed_total 2"), std::string::npos);
  store_->Hold(false);
  EXPECT_EQ(Codes(Request({{{"client", "c"}}}), 1), "+");
}

// The over-limit cache answers a descriptor whose bucket is in debt without the store, and the
// statistics say so.
TEST_F(RlsServiceInProcessTest, TheOverLimitCacheAnswersWithoutTheStoreAndCountsIt) {
  ServiceOptions options;
  options.over_limit_cache = std::make_shared<OverLimitCache>(clock_, 100);
  Configure(options);
  EXPECT_EQ(Codes(Request({{{"client", "bot-9"}}}), 2), "+x");
  store_->FailWith(Status::Unavailable("down"));  // the cache answers: the store is not asked
  EXPECT_EQ(Codes(Request({{{"client", "bot-9"}}}), 3), "xxx");
  EXPECT_EQ(service_->Stats().over_limit_with_local_cache, 3U);
  const std::string metrics = service_->MetricsText();
  EXPECT_NE(metrics.find("sluice_rls_over_limit_with_local_cache_total{domain=\"edge\",limit=\""),
            std::string::npos)
      << metrics;
  EXPECT_EQ(metrics.find("sluice_rls_failure_policy_total{decision=\"allowed\"} 1"),
            std::string::npos);
}

// Reconfigure puts new descriptors in force for the calls that follow; a bad file is refused by
// LoadMatcher, so the descriptors in force stay.
TEST_F(RlsServiceInProcessTest, ReloadedDescriptorsTakeOverAndABadFileKeepsTheOld) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("sluice-rls-reload-" + std::to_string(reinterpret_cast<uintptr_t>(this)));
  std::filesystem::create_directories(dir);
  config::RlsConfig rls;
  rls.config = {dir.string() + "/"};
  auto reload = [&](const std::string& yaml) {
    std::ofstream(dir / "edge.yaml") << yaml;
    Result<std::shared_ptr<const DescriptorMatcher>> matcher = LoadMatcher(rls);
    if (matcher.ok()) service_->Reconfigure(*matcher, {});
    return matcher.status();
  };
  auto limit = [&](const std::string& client) {
    return Ok(Request({{{"client", client}}})).statuses(0).current_limit().requests_per_unit();
  };
  EXPECT_EQ(limit("r"), 3U);
  EXPECT_TRUE(reload("domain: edge\ndescriptors:\n  - key: client\n    rate_limit: {unit: hour, "
                     "requests_per_unit: 7}\n")
                  .ok());
  EXPECT_EQ(limit("r2"), 7U);
  EXPECT_FALSE(reload("domain: edge\nbad: field\n").ok());
  EXPECT_EQ(limit("r3"), 7U);
  std::filesystem::remove_all(dir);
}

TEST_F(RlsServiceInProcessTest, JsonFormAnswers200WhenOkAnd429WhenOverAnd400ForMalformedBodies) {
  const std::string body =
      R"({"domain": "edge", "descriptors": [{"entries": [{"key": "client", "value": "json"}]}],
          "hits_addend": 2})";
  http::HttpResponse first = Json(body);
  EXPECT_EQ(first.result(), beast::http::status::ok);
  EXPECT_NE(first.body().find("\"overallCode\":\"OK\""), std::string::npos) << first.body();
  EXPECT_NE(first.body().find("\"limitRemaining\":1"), std::string::npos) << first.body();
  http::HttpResponse second = Json(body);
  EXPECT_EQ(second.result(), beast::http::status::too_many_requests);
  EXPECT_NE(second.body().find("OVER_LIMIT"), std::string::npos);

  for (const char* malformed : {"", "{", "[]", "{\"domain\": 5}", "{\"nope\": 1}"}) {
    EXPECT_EQ(Json(malformed).result(), beast::http::status::bad_request) << malformed;
  }
  EXPECT_EQ(Json("", beast::http::verb::get).result(), beast::http::status::method_not_allowed);
  EXPECT_EQ(Json("{}", beast::http::verb::post, "/other").result(), beast::http::status::not_found);
  EXPECT_EQ(Codes(Request({{{"client", "still-here"}}}), 1), "+");
}

}  // namespace
}  // namespace sluice::rls
