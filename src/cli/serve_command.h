// `sluice serve --config FILE`: runs the gateway's front ends until SIGTERM or SIGINT.
#pragma once

#include <CLI/CLI.hpp>

namespace sluice::cli {

// Adds the `serve` subcommand to `app`.
void AddServeCommand(CLI::App& app);

}  // namespace sluice::cli
