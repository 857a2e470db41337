// The fixed window counter's arithmetic, exactly as the Redis script (fixed_window.lua) does it,
// for stores that keep buckets themselves. Pure: no I/O, the time is passed in.
#pragma once

#include <cstdint>
#include <optional>

#include "sluice/rule.h"
#include "sluice/token_bucket.h"

namespace sluice {

// Counts `cost` against the window of `limit.period_ms` that holds `now_ms`, if the window's
// count stays within `limit.capacity`. Windows are aligned to the clock (a one-minute window
// starts on the minute), and a window's count is forgotten when it ends: `count` empty (no key)
// means nothing was counted yet. A negative cost gives back, never below zero. The outcome's
// state holds the count in `tokens`; its ttl is the time left in the window, or 0 (keep
// nothing) when the count is zero.
//
// Its known flaw: a client can spend one window's allowance at the end of it and the next
// window's at the start, twice the limit in a moment.
TakeOutcome TakeFixedWindow(const std::optional<int64_t>& count, const Limit& limit, int64_t cost,
                            int64_t now_ms);

}  // namespace sluice
