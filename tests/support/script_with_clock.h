// The repository's Lua scripts made to run on a test's clock in a real Redis.
#pragma once

#include <string>

#include "sluice/redis_options.h"
#include "sluice/rule.h"

namespace sluice::testing {

// The script of `algorithm` reading the clock from its last two arguments, seconds and
// microseconds as TIME gives them (the codes, when given, come before them), and recording each
// key's expiry instead of setting it, so that the real clock cannot expire a bucket mid-test: the
// token bucket's in its hash ("ttl") or, in the compact layout, under KEY:ttl, as GCRA's; a fixed
// window's end under KEY:end. Throws std::runtime_error when a script no longer has a line this
// swaps.
std::string ScriptWithClockFromArguments(Algorithm algorithm,
                                         BucketLayout layout = BucketLayout::kHash);

}  // namespace sluice::testing
