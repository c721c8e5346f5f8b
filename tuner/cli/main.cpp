// ktune: autotunes CUDA kernel templates per GPU and benchmarks them. See README.md, or `ktune --help`.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "tuner/cli/commands.hpp"
#include "tuner/session/environment.hpp"

using namespace ktune;

namespace {

const char* category_key(ErrorCategory c) {
    switch (c) {
        case ErrorCategory::bad_input:
            return "bad_input";
        case ErrorCategory::no_gpu:
            return "no_gpu";
        case ErrorCategory::compile:
            return "compile";
        case ErrorCategory::device:
            return "device";
        case ErrorCategory::store:
            return "store";
        case ErrorCategory::internal:
            return "internal";
    }
    return "internal";
}

// Under --json a script reads errors too: one JSON object on stderr, with the exit code the plain message would have.
int report_error(bool as_json, ErrorCategory category, const std::string& message, const std::string& where,
                 const std::string& plain) {
    if (as_json) {
        const nlohmann::json j = {
            {"error", {{"category", category_key(category)}, {"message", message}, {"where", where}}}};
        fmt::print(stderr, "{}\n", cli::json_text(j, -1));
    } else {
        fmt::print(stderr, "{}", plain);
    }
    return exit_code(category);
}

}  // namespace

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
        "Exit codes: 0 ok, 1 failure, 2 bad input, 3 no GPU, 4 results database error.",
        "ktune"};
    app.require_subcommand(1);
    app.set_version_flag("--version",
                         fmt::format("ktune {} (CUDA toolkit {})", ktune_version(), cuda_toolkit_version()));
    // Global options may also follow the subcommand (`ktune tune rmsnorm --db x.db`), as the README writes them.
    app.fallthrough();
    cli::GlobalOptions global;
    app.add_option("--root", global.root,
                   "Repository root holding kernels/ and search_spaces/ (default: $KTUNE_ROOT, the nearest such "
                   "ancestor of the working directory, else the share/ktune installed beside this executable)")
        ->check(cli::not_empty());
    app.add_option("--db", global.db,
                   "Results database (default: $KTUNE_DB or <root>/results/ktune.db; installed: "
                   "~/.local/share/ktune/ktune.db)")
        ->check(cli::not_empty());
    app.add_option("--cache-dir", global.cache_dir,
                   "NVRTC cubin cache (default: $KTUNE_CACHE_DIR, $XDG_CACHE_HOME/ktune or ~/.cache/ktune)")
        ->check(cli::not_empty());
    cli::register_commands(app, global);
    // Like git: ktune alone shows what it can do, and exits 1 since it did none of it.
    if (argc <= 1) {
        fmt::print("{}", app.help());
        return exit_failure;
    }
    bool as_json = false;
    for (int i = 1; i < argc && std::string_view(argv[i]) != "--"; ++i)
        as_json = as_json || std::string_view(argv[i]) == "--json";
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // CLI11 answers `ktune frobnicate` and `ktune --frobnicate` with "A subcommand is required"; name the word.
        if (app.get_subcommands().empty() && !app.remaining().empty()) {
            const std::string word = app.remaining().front();  // remaining() returns a copy
            std::string commands;
            for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
                commands += (commands.empty() ? "" : ", ") + sub->get_name();
            const std::string message = fmt::format("unknown {} '{}' (commands: {})",
                                                    word.starts_with("-") ? "option" : "command", word, commands);
            return report_error(as_json, ErrorCategory::bad_input, message, "",
                                "ktune: " + message + "\nRun with --help for more information.\n");
        }
        if (as_json && e.get_exit_code() != 0) return report_error(true, ErrorCategory::bad_input, e.what(), "", "");
        const int rc = app.exit(e);
        return rc == 0 ? exit_ok : exit_bad_input;
    }
    try {
        return cli::run_selected(app, global, argc, argv);
    } catch (const Error& e) {
        return report_error(as_json, e.category(), e.message(), e.where(),
                            fmt::format("ktune: {} error: {}\n", category_name(e.category()), e.what()));
    } catch (const std::exception& e) {
        return report_error(as_json, ErrorCategory::internal, e.what(), "",
                            fmt::format("ktune: internal error: {}\n", e.what()));
    }
}
