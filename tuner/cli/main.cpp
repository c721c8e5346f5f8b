// ktune: autotunes CUDA kernel templates per GPU and benchmarks them. See README.md, or `ktune --help`.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "tuner/cli/commands.hpp"
#include "core/error.hpp"

using namespace ktune;

int main(int argc, char** argv) {
    CLI::App app{
        "ktune: autotunes CUDA kernel templates for the GPU it runs on (NVRTC over a YAML search space), validates\n"
        "every configuration against a reference, times it with CUDA events (cold L2) and CUPTI, and stores the\n"
        "results per GPU in SQLite.\n\n"
        "Typical use:\n"
        "  ktune devices             GPUs, their copy-bandwidth ceiling and launch floor\n"
        "  ktune space rmsnorm       what would be tuned\n"
        "  ktune tune rmsnorm        tune it (resumes; a compile-only sweep when no GPU is present)\n"
        "  ktune best rmsnorm        the best configuration per problem on this GPU\n\n"
        "Exit codes: 0 ok, 1 failure, 2 bad input, 3 no GPU, 4 results database error."};
    app.require_subcommand(1);
    // Global options may also follow the subcommand (`ktune tune rmsnorm --db x.db`), as the README writes them.
    app.fallthrough();
    cli::GlobalOptions global;
    app.add_option("--root", global.root,
                   "Repository root holding kernels/ and search_spaces/ (default: $KTUNE_ROOT, the nearest such "
                   "ancestor of the working directory, or the source tree ktune was built from)");
    app.add_option("--db", global.db,
                   "Results database (default: $KTUNE_DB or <root>/results/ktune.db)");
    app.add_option("--cache-dir", global.cache_dir,
                   "NVRTC cubin cache (default: $KTUNE_CACHE_DIR, $XDG_CACHE_HOME/ktune or ~/.cache/ktune)");
    cli::register_commands(app, global);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // CLI11 answers `ktune frobnicate` and `ktune --frobnicate` with "A subcommand is required"; name the word.
        if (app.get_subcommands().empty() && !app.remaining().empty()) {
            const std::string word = app.remaining().front();  // remaining() returns a copy
            std::string commands;
            for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
                commands += (commands.empty() ? "" : ", ") + sub->get_name();
            fmt::print(stderr, "ktune: unknown {} '{}' (commands: {})\nRun with --help for more information.\n",
                       word.starts_with("-") ? "option" : "command", word, commands);
            return exit_bad_input;
        }
        const int rc = app.exit(e);
        return rc == 0 ? exit_ok : exit_bad_input;
    }
    try {
        return cli::run_selected(app, global, argc, argv);
    } catch (const Error& e) {
        fmt::print(stderr, "ktune: {} error: {}\n", category_name(e.category()), e.what());
        return exit_code(e.category());
    } catch (const std::exception& e) {
        fmt::print(stderr, "ktune: internal error: {}\n", e.what());
        return exit_failure;
    }
}
