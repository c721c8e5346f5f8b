#pragma once
// Subcommands over whole results databases: db merge.
#include <CLI/CLI.hpp>

#include <optional>

#include "tuner/cli/commands.hpp"

namespace ktune::cli {

void register_db_commands(CLI::App& app);
// The exit code when one of these subcommands was selected, nullopt otherwise.
std::optional<int> run_db_command(CLI::App& app, const GlobalOptions& global);

}  // namespace ktune::cli
