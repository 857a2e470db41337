// Envoy's rate limit service: a RateLimitRequest as the bytes gRPC hands over (ParseFromArray),
// planned against a fixed descriptor configuration (PlanRequest) and answered (Respond).
#include <cstddef>
#include <cstdint>

#include "rls_matcher.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sluice::rls::RateLimitRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  sluice::fuzz::PlanAndRespond(request);
  return 0;
}
