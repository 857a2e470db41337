// ${NAME} in the configuration file: a value from the process's environment, so that secrets
// and per-host settings stay out of the file.
#pragma once

#include <string>
#include <string_view>

#include "sluice/status.h"

namespace sluice::config {

// `text` with each ${NAME} replaced by the environment variable NAME (letters, digits and '_',
// not starting with a digit); "$${" writes a literal "${". An unset variable, a malformed name
// or a "${" without its "}" is an error that names it, never the value of anything.
Result<std::string> ExpandEnvironment(std::string_view text);

}  // namespace sluice::config
