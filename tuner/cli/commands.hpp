#pragma once
// The subcommands of ktune: their options and what they print. Each returns the process exit code.
#include <CLI/CLI.hpp>

#include <string>

namespace ktune::cli {

struct GlobalOptions {
    std::string root, db, cache_dir;
};

// Where the repository root, the results database and the compile cache are, from the options or their defaults.
struct Paths {
    std::string root, db, cache;
};
Paths resolve_paths(const GlobalOptions& g);

void register_commands(CLI::App& app, GlobalOptions& global);
int run_selected(CLI::App& app, const GlobalOptions& global, int argc, char** argv);

}  // namespace ktune::cli
