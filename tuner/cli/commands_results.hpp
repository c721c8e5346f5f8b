#pragma once
// Subcommands over stored results and regression checks: report, import-peers, baseline save, check.
#include <CLI/CLI.hpp>

#include <optional>

#include "tuner/cli/commands.hpp"

namespace ktune::cli {

void register_result_commands(CLI::App& app);
// The exit code when one of these subcommands was selected, nullopt otherwise.
std::optional<int> run_result_command(CLI::App& app, const GlobalOptions& global);

}  // namespace ktune::cli
