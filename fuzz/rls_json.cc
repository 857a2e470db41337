// The rate limit service's POST /json body: read into a RateLimitRequest as HandleJson reads it
// (ParseRateLimitRequestJson), which must agree with protobuf's JsonStringToMessage on every
// input, then planned and answered, each response printed as protobuf prints it.
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rls/json_form.h"
#include "rls_matcher.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  sluice::rls::RateLimitRequest request;
  const bool read = sluice::rls::ParseRateLimitRequestJson(body, request).ok();
  sluice::rls::RateLimitRequest expected;
  const bool protobuf_read = google::protobuf::util::JsonStringToMessage(body, &expected).ok();
  if (read != protobuf_read ||
      (read && !google::protobuf::util::MessageDifferencer::Equals(request, expected))) {
    std::abort();  // the JSON form read differently from protobuf's mapping
  }
  if (!read) return 0;
  sluice::fuzz::PlanAndRespond(request, [](const sluice::rls::RateLimitResponse& response) {
    std::string expected_json;
    (void)google::protobuf::util::MessageToJsonString(response, &expected_json);
    if (sluice::rls::RateLimitResponseJson(response) != expected_json) std::abort();
  });
  return 0;
}
