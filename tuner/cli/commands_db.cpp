// Subcommands over whole results databases: db merge.
#include "tuner/cli/commands_db.hpp"

#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "results/merge.hpp"

namespace ktune::cli {
namespace {

struct MergeCliOptions {
    std::vector<std::string> sources;
    std::string out;
    bool json = false;
};
MergeCliOptions g_merge;

int cmd_db_merge() {
    const std::vector<MergeCounts> merged = merge_databases(g_merge.sources, g_merge.out);
    if (g_merge.json) {
        nlohmann::json j = {{"out", g_merge.out}, {"sources", nlohmann::json::array()}};
        for (const MergeCounts& c : merged) {
            j["sources"].push_back({{"source", c.source},
                                    {"devices_added", c.devices_added},
                                    {"runs_added", c.runs_added},
                                    {"measurements_added", c.measurements_added},
                                    {"peers_added", c.peers_added},
                                    {"duplicates", c.duplicates},
                                    {"conflicts", c.conflicts},
                                    {"conflict_examples", c.conflict_examples},
                                    {"notices", c.notices}});
        }
        std::cout << json_text(j) << "\n";
    } else {
        for (const MergeCounts& c : merged) {
            fmt::print("{}: {} measurements, {} runs, {} devices, {} peer measurements added; {} already there{}\n",
                       c.source, c.measurements_added, c.runs_added, c.devices_added, c.peers_added, c.duplicates,
                       c.conflicts ? fmt::format("; {} conflicts (kept what {} had)", c.conflicts, g_merge.out) : "");
            for (const std::string& n : c.notices) fmt::print("  note: {}\n", n);
            for (const std::string& e : c.conflict_examples) fmt::print("  conflict: {}\n", e);
            if (c.conflicts > std::int64_t(c.conflict_examples.size()))
                fmt::print("  ... and {} more conflicts\n", c.conflicts - std::int64_t(c.conflict_examples.size()));
        }
        fmt::print("merged {} databases into {}\n", merged.size(), g_merge.out);
    }
    // Conflicts are reported, not fatal: the output is complete and consistent, and says which rows it kept.
    return exit_ok;
}

}  // namespace

void register_db_commands(CLI::App& app) {
    auto* db = app.add_subcommand("db", "Whole results databases: merge those of several GPUs, hosts or shards");
    auto* merge = db->add_subcommand(
        "merge",
        "Merge results databases into one (--out, created when missing): every measurement keeps its run and host. "
        "Idempotent and resumable: each database goes in one transaction, and what --out already holds is skipped. "
        "A measurement --out holds from another run is a conflict: --out keeps its own (the first database named "
        "wins) and the conflict is listed. A device whose key --out holds with another calibration is kept apart");
    merge->add_option("databases", g_merge.sources, "The databases to merge, in order")->required();
    merge->add_option("--out", g_merge.out, "The merged database")->required()->check(not_empty());
    merge->add_flag("--json", g_merge.json, "Print JSON");
}

std::optional<int> run_db_command(CLI::App& app, const GlobalOptions&) {
    if (!app.got_subcommand("db")) return std::nullopt;
    CLI::App* db = app.get_subcommand("db");
    if (db->got_subcommand("merge")) return cmd_db_merge();
    throw Error(ErrorCategory::bad_input, "which? `ktune db merge A.db B.db ... --out M.db` (the only one so far)",
                "db");
}

}  // namespace ktune::cli
