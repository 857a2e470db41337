// `sluice check-config FILE`: validates a configuration without serving.
#pragma once

#include <CLI/CLI.hpp>

namespace sluice::cli {

// Adds the `check-config` subcommand to `app`.
void AddCheckConfigCommand(CLI::App& app);

}  // namespace sluice::cli
