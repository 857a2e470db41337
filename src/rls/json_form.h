// The JSON form of ShouldRateLimit (POST /json): protobuf's JSON mapping of RateLimitRequest and
// RateLimitResponse. protobuf's own converter goes through its type-resolver machinery and costs
// more than the rest of a call together, so the forms every caller sends and every answer takes
// are read and written here directly; anything else (other fields, escapes beyond the simple
// ones, non-ASCII text, numbers in other spellings, duplicate keys, malformed JSON) goes to
// protobuf's converter, so that a caller gets the message, or the error, protobuf's mapping
// defines whichever way its JSON is spelled.
#pragma once

#include <string>
#include <string_view>

#include "rls/rate_limit_plan.h"
#include "sluice/status.h"

namespace sluice::rls {

// `json` into `request` as google::protobuf::util::JsonStringToMessage reads it (unknown fields
// refused); kInvalidArgument with protobuf's message when it does not.
Status ParseRateLimitRequestJson(std::string_view json, RateLimitRequest& request);

// `response` as google::protobuf::util::MessageToJsonString prints it with its default options
// (lowerCamelCase names, enums by name, default values left out), byte for byte.
std::string RateLimitResponseJson(const RateLimitResponse& response);

}  // namespace sluice::rls
