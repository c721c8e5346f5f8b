// Shards across hosts, without a GPU: a compile-only sweep split into four shards run as four processes at once (as a
// job array runs them), merged with `ktune db merge`, holds what the unsharded sweep holds.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include <fmt/format.h>

#include "cli_runner.hpp"
#include "results/store.hpp"

namespace ktune {
namespace {

using cli_test::run_ktune;
using cli_test::RunResult;
using cli_test::Sandbox;
namespace fs = std::filesystem;

// The user's op of examples/user_op over its eight bf16 problems, narrowed to eight configurations of one kernel:
// every part of the identity varies, and it compiles in seconds.
std::vector<std::string> sweep_args(const fs::path& cache, const fs::path& db) {
    return {"--cache-dir",    cache.string(),
            "--db",           db.string(),
            "tune",           std::string(KTUNE_SOURCE_ROOT) + "/examples/user_op/bias_gelu.yaml",
            "--compile-only", "--quiet",
            "--dtype",        "bf16",
            "--kernel",       "flat",
            "--config",       "VEC=8,BLOCK=256",
            "--config",       "VEC=4,BLOCK=128"};
}

// Every row as its identity and what the compiler said: what must not depend on how the work was split.
std::set<std::string> rows(const fs::path& db) {
    Store s = Store::open(db.string(), Store::Mode::read_only);
    std::set<std::string> out;
    for (const ResultRecord& r : s.results({}))
        out.insert(r.kernel.alternative + "|" + r.kernel.source_hash + "|" + r.config_key + "|" + r.problem.key() +
                   "|" + r.device_key + "|" + std::string(status_name(r.measurement.status)) + "|" +
                   std::to_string(r.measurement.compile.registers));
    return out;
}

TEST(ShardedSweep, FourShardsAsFourProcessesMergedHoldWhatTheUnshardedSweepHolds) {
    Sandbox box("sharded_sweep");
    const fs::path cache = box.work() / "cache";
    std::vector<std::unique_ptr<Sandbox>> shards;
    for (int i = 0; i < 4; ++i) shards.push_back(std::make_unique<Sandbox>("sharded_sweep_" + std::to_string(i)));
    std::vector<RunResult> results(4);
    std::vector<std::thread> processes;
    for (int i = 0; i < 4; ++i)
        processes.emplace_back([&, i] {
            std::vector<std::string> args = sweep_args(cache, box.work() / fmt::format("shard{}.db", i));
            std::vector<std::string> env;
            if (i == 3) {
                // The last as a Slurm array task would run it: its index from the environment, ids from 1.
                env = {"SLURM_ARRAY_TASK_ID=4", "SLURM_ARRAY_TASK_MIN=1", "SLURM_ARRAY_TASK_COUNT=4"};
            } else {
                args.push_back("--shard");
                args.push_back(fmt::format("{}/4", i));
            }
            results[std::size_t(i)] = run_ktune(*shards[std::size_t(i)], args, true, env);
        });
    for (std::thread& p : processes) p.join();
    std::size_t sharded_rows = 0;
    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(results[std::size_t(i)].exit_code, 0) << results[std::size_t(i)].err;
        EXPECT_NE(results[std::size_t(i)].err.find(fmt::format("shard {}/4", i)), std::string::npos)
            << results[std::size_t(i)].err;
        const std::size_t n = rows(box.work() / fmt::format("shard{}.db", i)).size();
        EXPECT_GT(n, 0u) << "shard " << i << " took no work";
        sharded_rows += n;
    }

    const RunResult merged =
        run_ktune(box, {"db", "merge", (box.work() / "shard0.db").string(), (box.work() / "shard1.db").string(),
                        (box.work() / "shard2.db").string(), (box.work() / "shard3.db").string(), "--out",
                        (box.work() / "merged.db").string()});
    ASSERT_EQ(merged.exit_code, 0) << merged.err;
    EXPECT_NE(merged.out.find("merged 4 databases"), std::string::npos) << merged.out;
    const RunResult whole = run_ktune(box, sweep_args(cache, box.work() / "whole.db"));
    ASSERT_EQ(whole.exit_code, 0) << whole.err;

    const std::set<std::string> expected = rows(box.work() / "whole.db");
    EXPECT_EQ(sharded_rows, expected.size()) << "the shards overlap";
    EXPECT_EQ(rows(box.work() / "merged.db"), expected);
    // Every measurement keeps its run: four of them, one per shard.
    Store m = Store::open((box.work() / "merged.db").string(), Store::Mode::read_only);
    std::set<std::string> run_uids;
    for (const ResultRecord& r : m.results({})) run_uids.insert(m.run(r.run_id)->uid);
    EXPECT_EQ(run_uids.size(), 4u);

    // Merging again changes nothing.
    const RunResult again = run_ktune(box, {"db", "merge", (box.work() / "shard0.db").string(), "--out",
                                            (box.work() / "merged.db").string(), "--json"});
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_NE(again.out.find("\"measurements_added\": 0"), std::string::npos) << again.out;
    EXPECT_EQ(rows(box.work() / "merged.db"), expected);
}

}  // namespace
}  // namespace ktune
