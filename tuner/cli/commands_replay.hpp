#pragma once
// `ktune replay` (search strategies replayed over brute-forced results, no GPU) and `ktune export-t4` (stored results
// as a Kernel Tuner T4 file).
#include <CLI/CLI.hpp>

#include <optional>

#include "tuner/cli/commands.hpp"

namespace ktune::cli {

void register_replay_commands(CLI::App& app);
// The exit code when one of these subcommands was selected, nullopt otherwise.
std::optional<int> run_replay_command(CLI::App& app, const GlobalOptions& global);

}  // namespace ktune::cli
