// Boost 1.74's Beast takes and gives Boost's string_view, the rest of Sluice the standard one;
// these convert between the two without copying.
#pragma once

#include <boost/beast/core/string.hpp>
#include <string_view>

namespace sluice::http {

inline std::string_view StdView(boost::beast::string_view s) { return {s.data(), s.size()}; }

inline boost::beast::string_view BeastView(std::string_view s) { return {s.data(), s.size()}; }

}  // namespace sluice::http
