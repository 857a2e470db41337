// The rate limit service's POST /json body: JSON mapped into a RateLimitRequest as
// HandleJson maps it (protobuf's JsonStringToMessage), then planned and answered.
#include <google/protobuf/util/json_util.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rls_matcher.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  sluice::rls::RateLimitRequest request;
  if (!google::protobuf::util::JsonStringToMessage(body, &request).ok()) return 0;
  sluice::fuzz::PlanAndRespond(request);
  return 0;
}
