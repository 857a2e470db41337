// `sluice quota`: a durable rule's quota for support teams, against the configured quota store:
// `get` (used, limit, window), `set --used N`, `reset`, and `init` (the table and functions).
#pragma once

#include <CLI/CLI.hpp>

namespace sluice::cli {

// Adds the `quota` subcommand and its own subcommands to `app`.
void AddQuotaCommand(CLI::App& app);

}  // namespace sluice::cli
