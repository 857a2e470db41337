// `sluice demo-upstream --listen ADDR`: a tiny HTTP service to stand behind the gateway in the
// demo and in tests. GET /anything answers 200 with JSON naming the path; /slow?ms=N waits N ms
// first (at most a minute).
#pragma once

#include <CLI/CLI.hpp>

namespace sluice::cli {

// Adds the `demo-upstream` subcommand to `app`.
void AddDemoUpstreamCommand(CLI::App& app);

}  // namespace sluice::cli
