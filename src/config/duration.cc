#include "duration.h"

#include <charconv>
#include <limits>
#include <string>

namespace sluice::config {

Result<int64_t> ParseDurationMs(std::string_view text) {
  int64_t number = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  auto bad = [text](std::string_view why) {
    return Status::InvalidArgument("bad duration \"" + std::string(text) +
                                   "\": " + std::string(why));
  };
  if (error == std::errc::result_out_of_range) return bad("too large");
  if (error != std::errc() || number < 0) return bad("expected a whole number and a unit");
  const std::string_view unit(end, static_cast<size_t>(text.data() + text.size() - end));
  int64_t scale = 0;
  if (unit.empty() || unit == "ms") {
    scale = 1;
  } else if (unit == "s") {
    scale = 1000;
  } else if (unit == "m") {
    scale = 60'000;
  } else if (unit == "h") {
    scale = 3'600'000;
  } else if (unit == "d") {
    scale = 86'400'000;
  } else {
    return bad("the unit must be ms, s, m, h or d");
  }
  if (number > std::numeric_limits<int64_t>::max() / scale) return bad("too large");
  return number * scale;
}

}  // namespace sluice::config
