#include <CLI/CLI.hpp>

#include "check_command.h"

int main(int argc, char** argv) {
  CLI::App app{"Sluice: a distributed rate limiter"};
  app.require_subcommand(1);
  sluice::cli::AddCheckCommand(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
