// GCRA's arithmetic, exactly as the Redis script (gcra.lua) does it, for stores that keep
// buckets themselves. Pure: no I/O, the time is passed in.
#pragma once

#include <cstdint>
#include <optional>

#include "sluice/rule.h"
#include "sluice/token_bucket.h"

namespace sluice {

// Takes `cost` tokens from a GCRA bucket whose theoretical arrival time (the moment it is full
// again) is `tat_ms`, if they are there. A missing bucket (`tat_ms` empty) is full, and so is one
// whose TAT has passed. One number cannot tell a clock that stepped back from a bucket that was
// drained, so a step back of d ms takes d's worth of tokens away (never below empty), where the
// token bucket only pauses its refills. A negative cost gives tokens back, never past full. The
// outcome's state holds the new TAT in `tat_ms`.
TakeOutcome TakeGcra(const std::optional<double>& tat_ms, const Limit& limit, int64_t cost,
                     int64_t now_ms);

}  // namespace sluice
