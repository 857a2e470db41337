#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "check_command.h"
#include "check_config_command.h"
#include "demo_upstream_command.h"
#include "quota_command.h"
#include "serve_command.h"
#include "version.h"

int main(int argc, char** argv) {
  try {
    // Logs go to standard error, so that standard output stays the commands' own.
    spdlog::set_default_logger(spdlog::stderr_color_mt("sluice"));
    CLI::App app{"Sluice: a distributed rate limiter"};
    app.set_version_flag("--version", sluice::cli::VersionLine());
    app.require_subcommand(1);
    sluice::cli::AddCheckCommand(app);
    sluice::cli::AddCheckConfigCommand(app);
    sluice::cli::AddServeCommand(app);
    sluice::cli::AddDemoUpstreamCommand(app);
    sluice::cli::AddQuotaCommand(app);
    CLI11_PARSE(app, argc, argv);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "sluice: " << e.what() << "\n";
    return 1;
  }
}
