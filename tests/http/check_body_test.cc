#include "http/check_body.h"

#include <gtest/gtest.h>

namespace sluice::http {
namespace {

TEST(CheckBodyTest, ReadsAttributesRouteAndCost) {
  Result<Request> request = ParseCheckBody(
      R"({"attributes": {"ip": "10.0.0.1", "key": "ak"}, "method": "GET", "path": "/a",)"
      R"( "cost": 7})");
  ASSERT_TRUE(request.ok()) << request.status().message();
  ASSERT_NE(request->Find("key"), nullptr);
  EXPECT_EQ(*request->Find("key"), "ak");
  EXPECT_EQ(request->method(), "GET");
  EXPECT_EQ(request->path(), "/a");
  EXPECT_EQ(request->cost(), 7);
}

TEST(CheckBodyTest, RefusesWhatIsNotTheForm) {
  for (const char* body :
       {"", "[]", "{}", R"({"attributes": []})", R"({"attributes": {"a": 1}})",
        R"({"attributes": {}, "method": 1})", R"({"attributes": {}, "cost": -1})",
        R"({"attributes": {}, "cost": 1.5})", R"({"attributes": {}, "cost": 1000000000001})",
        // Past int64_t: read as unsigned, never wrapped to a small or negative cost.
        R"({"attributes": {}, "cost": 18446744073709551615})"}) {
    Result<Request> request = ParseCheckBody(body);
    EXPECT_FALSE(request.ok()) << body;
    if (!request.ok()) {
      EXPECT_EQ(request.status().code(), StatusCode::kInvalidArgument) << body;
    }
  }
}

}  // namespace
}  // namespace sluice::http
