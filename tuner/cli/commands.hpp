#pragma once
// The subcommands of ktune: their options and what they print. Each returns the process exit code.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>

#include "tuner/session/environment.hpp"

namespace ktune::cli {

struct GlobalOptions {
    std::string root, db, cache_dir;
};

// What a command needs the repository root for.
enum class RootUse {
    kernels,        // its kernels and search spaces: no root is an error
    defaults_only,  // only for the default database and for space names: --db and YAML files do without one
    names_only,     // only for space names; the command opens no database
};

// Where the repository root, the results database and the compile cache are, from the options or their defaults.
struct Paths {
    std::string root;  // "" when the command needs none and none was found
    std::string db;    // "" with RootUse::names_only
    std::string cache;
};
Paths resolve_paths(const GlobalOptions& g, RootUse use = RootUse::kernels);

// The search spaces a name on the command line stands for, the same on every command (resolve_space).
SpaceRef space_named(const Paths& p, const std::string& name);

// Throws Error(bad_input, where "--cache-dir") when the compile cache folder cannot be written or created: every
// compile would fail later, as a cache error about one cubin.
void require_writable_cache(const std::string& cache);

// JSON as ktune prints it: strings from YAML files or a database may hold bytes that are not UTF-8, and they are
// replaced by U+FFFD instead of failing the whole output.
std::string json_text(const nlohmann::json& j, int indent = 2);

// A CLI11 check that refuses an empty value: an option given as '' would otherwise silently mean its default.
CLI::Validator not_empty();

void register_commands(CLI::App& app, GlobalOptions& global);
int run_selected(CLI::App& app, const GlobalOptions& global, int argc, char** argv);

}  // namespace ktune::cli
