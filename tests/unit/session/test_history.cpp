#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ktune_test_config.hpp"
#include "tests/common/temp_dir.hpp"
#include "tuner/session/history.hpp"

namespace ktune {
namespace {

Config rms(std::int64_t block, std::int64_t vec, std::int64_t unroll) {
    return Config{{{"BLOCK", block}, {"VEC", vec}, {"UNROLL", unroll}, {"ROWS_PER_BLOCK", 1}}};
}

// The transfer hints `ktune tune` gives a search of bf16:M=16,H=4096 on the rmsnorm space from a database of earlier
// runs, through the same functions (tuning_session.cpp): the stored winners of the other problems, the most similar
// first, then their runners-up, each a candidate of this problem, never its own, at most the limit.
class TuningHistory : public testing::Test {
protected:
    void SetUp() override {
        m_store.emplace(Store::open((m_dir.path() / "results.db").string()));
        m_kernel =
            KernelInfo{m_space.op(), m_space.variant(), "kernels/rmsnorm/rmsnorm_fwd.cuh", "this-source", "cold"};
        m_run1 = m_store->begin_run({});
        m_run2 = m_store->begin_run({});
    }
    void record(const Problem& p, const std::string& config_key, double us, std::int64_t run,
                const std::string& source = "this-source", const std::string& alternative = "") {
        ResultRecord r;
        r.kernel = m_kernel;
        r.kernel.source_hash = source;
        r.kernel.alternative = alternative;
        r.config_key = config_key;
        r.problem = p;
        r.device_key = "dev-A";
        r.run_id = run;
        r.measurement.status = Status::ok;
        r.measurement.stats.n = 1;
        r.measurement.stats.p50 = us;
        r.measurement.samples_us = {us};
        m_store->record(r);
    }
    std::vector<std::string> hints(const Problem& p, std::int64_t before_run, std::size_t limit) {
        const std::vector<TunedProblem> winners =
            history_winners(stored_history(*m_store, m_space, m_kernel, "dev-A"), p, {p}, before_run);
        std::vector<std::string> out;
        for (const Config& c : transfer_hints(
                 p, winners, [&](const Config& c) { return is_selected_config(m_space, c, p, {}); }, limit))
            out.push_back(c.key());
        return out;
    }

    test::TempDir m_dir;
    SearchSpace m_space = SearchSpace::load_file(std::string(KTUNE_SOURCE_ROOT) + "/search_spaces/rmsnorm.yaml");
    std::optional<Store> m_store;
    KernelInfo m_kernel;
    std::int64_t m_run1 = 0, m_run2 = 0;
};

TEST_F(TuningHistory, HintsAreOtherProblemsStoredWinnersValidHereMostSimilarFirstAtMostTheLimit) {
    const Problem p{Dtype::bf16, {{"M", 16}, {"H", 4096}}};
    const std::string own = rms(256, 8, 1).key();
    record(p, own, 1.0, m_run1);  // its own result: never a hint
    // Nearest (one step of log2 H), but its winner has BLOCK * VEC > H here: not a candidate; its runner-up comes after
    // every problem's winner.
    record({Dtype::bf16, {{"M", 16}, {"H", 8192}}}, rms(1024, 8, 1).key(), 3.0, m_run1);
    record({Dtype::bf16, {{"M", 16}, {"H", 8192}}}, rms(128, 8, 2).key(), 4.0, m_run1);
    // Four steps away, both.
    record({Dtype::bf16, {{"M", 256}, {"H", 4096}}}, rms(512, 8, 1).key(), 2.0, m_run1);
    record({Dtype::bf16, {{"M", 1}, {"H", 4096}}}, rms(128, 4, 8).key(), 2.0, m_run1);
    // Eight steps: a value BLOCK does not declare (the rules alone would accept it).
    record({Dtype::bf16, {{"M", 4096}, {"H", 4096}}}, rms(96, 8, 1).key(), 2.0, m_run1);
    // A dtype of another width: after every shape of this one.
    record({Dtype::fp32, {{"M", 16}, {"H", 4096}}}, rms(64, 4, 2).key(), 2.0, m_run1);
    // Another source's parameters: not a configuration of this space.
    record({Dtype::bf16, {{"M", 16}, {"H", 2048}}}, "BLOCK=256,VEC=8,TILE=2", 0.5, m_run1, "older-source");

    const std::vector<std::string> all = hints(p, m_run2, 16);
    EXPECT_EQ(all, (std::vector<std::string>{rms(128, 4, 8).key(), rms(512, 8, 1).key(), rms(64, 4, 2).key(),
                                             rms(128, 8, 2).key()}));
    for (const std::string& h : all) EXPECT_NE(h, own);
    EXPECT_EQ(hints(p, m_run2, 2), (std::vector<std::string>{rms(128, 4, 8).key(), rms(512, 8, 1).key()}));
}

TEST_F(TuningHistory, AResumedProblemSeesOnlyWhatWasStoredBeforeItsFirstRun) {
    const Problem p{Dtype::bf16, {{"M", 16}, {"H", 4096}}};
    const Problem q{Dtype::bf16, {{"M", 32}, {"H", 4096}}};
    record(q, rms(512, 8, 1).key(), 2.0, m_run1);
    record(p, rms(256, 8, 1).key(), 1.0, m_run2);  // the run being resumed measured p
    record(q, rms(128, 4, 8).key(), 1.5, m_run2);  // and q faster since
    EXPECT_EQ(hints(p, m_run2, 16), (std::vector<std::string>{rms(512, 8, 1).key()}));
    EXPECT_EQ(hints(p, m_run2 + 1, 16), (std::vector<std::string>{rms(128, 4, 8).key(), rms(512, 8, 1).key()}));
}

// What a problem of the run hands on when it finishes: its three fastest of the kernel's source, fastest first.
TEST_F(TuningHistory, AFinishedProblemHandsOnItsThreeFastestOfTheKernelsSource) {
    const Problem p{Dtype::bf16, {{"M", 16}, {"H", 4096}}};
    record(p, rms(64, 4, 2).key(), 4.0, m_run1);
    record(p, rms(128, 4, 8).key(), 2.0, m_run1);
    record(p, rms(256, 8, 1).key(), 1.0, m_run2);
    record(p, rms(512, 8, 1).key(), 3.0, m_run2);
    record(p, rms(1024, 8, 1).key(), 0.5, m_run2, "older-source");
    record({Dtype::bf16, {{"M", 32}, {"H", 4096}}}, rms(128, 8, 2).key(), 0.1, m_run2);
    std::vector<std::string> keys;
    std::vector<double> slowdown;
    for (const Config& c : stored_fastest(*m_store, m_space, m_kernel, "dev-A", p, &slowdown)) keys.push_back(c.key());
    EXPECT_EQ(keys, (std::vector<std::string>{rms(256, 8, 1).key(), rms(128, 4, 8).key(), rms(512, 8, 1).key()}));
    EXPECT_EQ(slowdown, (std::vector<double>{1.0, 2.0, 3.0}));  // each one's time over the fastest's
}

// And what it hands on to a later search that learns across problems (learn_from): every ok result of the kernel's
// source, fastest first.
TEST_F(TuningHistory, AFinishedProblemHandsOnEveryResultOfTheKernelsSource) {
    const Problem p{Dtype::bf16, {{"M", 16}, {"H", 4096}}};
    record(p, rms(64, 4, 2).key(), 4.0, m_run1);
    record(p, rms(128, 4, 8).key(), 2.0, m_run1);
    record(p, rms(256, 8, 1).key(), 1.0, m_run2);
    record(p, rms(1024, 8, 1).key(), 0.5, m_run2, "older-source");
    record({Dtype::bf16, {{"M", 32}, {"H", 4096}}}, rms(128, 8, 2).key(), 0.1, m_run2);
    const ProblemResults r = stored_results(*m_store, m_space, m_kernel, "dev-A", p);
    EXPECT_EQ(r.problem, p);
    std::vector<std::pair<std::string, double>> times;
    for (const auto& [c, t] : r.times) times.emplace_back(c.key(), t);
    EXPECT_EQ(times, (std::vector<std::pair<std::string, double>>{
                         {rms(256, 8, 1).key(), 1.0}, {rms(128, 4, 8).key(), 2.0}, {rms(64, 4, 2).key(), 4.0}}));
}

TEST_F(TuningHistory, KernelBestsAreEachAlternativesFastestPerProblemAndRun) {
    const Problem a{Dtype::bf16, {{"M", 16}, {"H", 4096}}}, b{Dtype::bf16, {{"M", 64}, {"H", 4096}}};
    record(a, rms(256, 8, 1).key(), 5.0, m_run1, "src-x", "x");
    record(a, rms(512, 8, 1).key(), 4.0, m_run1, "src-x", "x");
    record(a, rms(1024, 8, 1).key(), 3.0, m_run2, "src-x", "x");  // another run: kept apart
    record(a, rms(256, 8, 1).key(), 7.0, m_run1, "src-y", "y");
    record(b, rms(256, 8, 1).key(), 2.0, m_run1, "src-y", "y");
    std::vector<std::string> got;
    for (const KernelBest& k : stored_kernel_bests(*m_store, m_kernel, "dev-A"))
        got.push_back(fmt::format("{} {} {} {}", k.kernel, k.problem.key(), k.best, k.run_id == m_run1 ? 1 : 2));
    std::ranges::sort(got);
    EXPECT_EQ(got, (std::vector<std::string>{"x bf16:M=16,H=4096 3 2", "x bf16:M=16,H=4096 4 1",
                                             "y bf16:M=16,H=4096 7 1", "y bf16:M=64,H=4096 2 1"}));
}

}  // namespace
}  // namespace ktune
