// The check API's JSON body (POST /v1/check, /v1/report), from any client that reaches
// check_listen.
#include <cstddef>
#include <cstdint>
#include <string>

#include "http/check_body.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  (void)sluice::http::ParseCheckBody(body);
  return 0;
}
