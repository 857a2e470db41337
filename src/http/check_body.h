// The check API's JSON body (POST /v1/check and /v1/report), read into a request's attributes.
// Its own header so that the body, which comes from any client, can be fuzzed apart from the
// gateway (fuzz/check_body.cc).
#pragma once

#include <string>

#include "sluice/request.h"
#include "sluice/status.h"

namespace sluice::http {

// {"attributes": {NAME: STRING...}, "method": STRING, "path": STRING, "cost": 0..kMaxCapacity};
// kInvalidArgument, with what is wrong, for anything else.
Result<Request> ParseCheckBody(const std::string& body);

}  // namespace sluice::http
