// `sluice check`: asks a limiter about one request, some number of times, and prints each
// decision. For trying rules out, and for scripts and tests that need a separate process.
#pragma once

#include <CLI/CLI.hpp>

namespace sluice::cli {

// Adds the `check` subcommand to `app`.
void AddCheckCommand(CLI::App& app);

}  // namespace sluice::cli
