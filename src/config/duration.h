// Durations as people write them in configuration: "500ms", "1s", "1m", "1h", "1d".
#pragma once

#include <cstdint>
#include <string_view>

#include "sluice/status.h"

namespace sluice::config {

// Parses a whole number followed by ms, s, m, h or d (a bare number is milliseconds) into
// milliseconds. Refuses negative, empty, overflowing or unit-less-but-junk text.
Result<int64_t> ParseDurationMs(std::string_view text);

}  // namespace sluice::config
