// A space of alternative kernels replayed as `ktune tune` tunes it: each kernel searched on its own, from its own
// kernel's winners at the other problems, with its own budget, and the problem's result the best of them all.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "tests/common/temp_dir.hpp"
#include "tuner/replay/comparison.hpp"
#include "tuner/replay/replay.hpp"

namespace ktune {
namespace {

ResultRecord record(const std::string& alternative, const std::string& source_hash, const std::string& config_key,
                    const Problem& p, double p50) {
    ResultRecord r;
    r.kernel = KernelInfo{"gemm_act", "gelu", "kernels/gemm/" + alternative + ".cuh", source_hash, "cold", alternative};
    r.config_key = config_key;
    r.problem = p;
    r.device_key = "dev-A";
    r.measured_at = "2025-01-01T00:00:00Z";
    r.measurement.status = Status::ok;
    r.measurement.stats.n = 2;
    r.measurement.stats.p50 = p50;
    r.measurement.samples_us = {p50, p50};
    r.measurement.compile.compile_seconds = 0.5;
    return r;
}

// Two problems of a space of two kernels, tuned kernel by kernel as `ktune tune` does: `big` (30 configurations, B),
// measured first and with the most results, and `small` (10, T), whose T=7 is the optimum of both problems (1.0 against
// big's best 2.0); an older source of `small` with one result at M=16.
std::vector<ReplaySpace> two_kernels(const test::TempDir& dir) {
    Store store = Store::open((dir.path() / "results.db").string());
    const std::vector<Problem> problems{{Dtype::bf16, {{"M", 16}}}, {Dtype::bf16, {{"M", 32}}}};
    for (const Problem& p : problems)
        for (int b = 1; b <= 30; ++b) store.record(record("big", "hash-big", fmt::format("B={}", b), p, 2.0 + b % 7));
    for (const Problem& p : problems)
        for (int t = 1; t <= 10; ++t)
            store.record(record("small", "hash-small", fmt::format("T={}", t), p, t == 7 ? 1.0 : 3.0 + t % 3));
    store.record(record("small", "hash-small-old", "T=7", problems[0], 0.5));
    return replay_spaces_from_store(store, "gemm_act", {"dev-A"});
}

// Random search, two runs, repeatable in time: what the budget tests need.
ComparisonOptions two_random_runs() {
    ComparisonOptions o;
    o.strategies = {"random"};
    o.runs = 2;
    o.count_strategy_time = false;
    return o;
}

TEST(ReplayAlternatives, FromTheStoreEveryKernelsSourceWithTheMostResults) {
    test::TempDir dir;
    const std::vector<ReplaySpace> spaces = two_kernels(dir);
    ASSERT_EQ(spaces.size(), 2u);
    for (const ReplaySpace& s : spaces) {
        ASSERT_EQ(s.entries.size(), 40u) << s.name;  // both kernels, not only the one with the most results
        ASSERT_EQ(s.kernels.size(), 2u);
        EXPECT_EQ(s.kernels[0].name, "big");  // in the order they were measured
        EXPECT_EQ(s.kernels[0].begin, 0u);
        EXPECT_EQ(s.kernels[0].size, 30u);
        EXPECT_EQ(s.kernels[1].name, "small");
        EXPECT_EQ(s.kernels[1].begin, 30u);
        EXPECT_EQ(s.kernels[1].size, 10u);
        const auto best = std::ranges::min_element(s.entries, {}, &ReplayEntry::value);
        EXPECT_EQ(best->config.key(), "T=7");
        EXPECT_DOUBLE_EQ(best->value, 1.0);  // not the older source's 0.5
        const ReplaySpace small = kernel_space(s, 1);
        ASSERT_EQ(small.entries.size(), 10u);
        EXPECT_EQ(small.entries.front().config.key(), "T=1");
    }
}

TEST(ReplayAlternatives, TheOptimumInTheKernelWithFewerResultsIsFoundFromItsOwnHints) {
    test::TempDir dir;
    const std::vector<ReplaySpace> spaces = two_kernels(dir);
    ComparisonOptions o;
    o.strategies = {"forest", "random"};
    o.runs = 10;
    o.count_strategy_time = false;
    for (const bool history : {true, false}) {
        o.history = history;
        const std::vector<Comparison> c = compare_strategies(spaces, o);
        ASSERT_EQ(c.size(), 2u);
        EXPECT_DOUBLE_EQ(c[1].stats.optimum, 1.0);  // over both kernels
        EXPECT_EQ(c[1].stats.size, 40u);
        // Each kernel its default run (the whole of these small spaces), the run both together; with the history,
        // big (twice small's best at the other problem) is triaged to kTriageProbe evaluations, and small has all of
        // its space already.
        ASSERT_EQ(c[1].kernels.size(), 2u);
        EXPECT_EQ(c[1].kernels[0].budget, history ? kTriageProbe : 30);
        EXPECT_EQ(c[1].kernels[1].budget, 10);
        EXPECT_EQ(c[1].budget, history ? 10 + kTriageProbe : 40);
        for (const Efficiency& e : c[1].strategies) {
            EXPECT_DOUBLE_EQ(e.mean_evaluations, double(c[1].budget)) << e.strategy;
            // Each kernel's first proposal comes first: small's is T=7, the winner of small at the other problem
            // (history) or the problem before (in-run). With the history small, expected the faster, goes first (the
            // optimum at the first evaluation of 40); in-run, without an expectation, the kernels' order (the second).
            EXPECT_DOUBLE_EQ(e.share_within_small[0], 1.0) << e.strategy << (history ? " history" : " in-run");
            EXPECT_DOUBLE_EQ(e.fraction_within[0], history ? 1.0 / 40 : 2.0 / 40) << e.strategy;
        }
    }
    o.transfer = false;
    o.history = false;
    const std::vector<Comparison> without = compare_strategies(spaces, o);
    for (const Efficiency& e : without[1].strategies) EXPECT_LT(e.share_within_small[0], 0.5) << e.strategy;
}

TEST(ReplayAlternatives, EachKernelGetsTheBudgetOfItsOwnSpace) {
    test::TempDir dir;
    const std::vector<ReplaySpace> spaces = two_kernels(dir);
    ComparisonOptions o = two_random_runs();
    o.budget_share = 0.1;  // as `auto` gives each kernel a tenth of its space
    Comparison c = compare_strategies(spaces[0], o);
    EXPECT_EQ(c.kernels.at(0).budget, 3);
    EXPECT_EQ(c.kernels.at(1).budget, 1);
    EXPECT_EQ(c.budget, 4);
    EXPECT_DOUBLE_EQ(c.strategies.at(0).mean_evaluations, 4.0);
    o.budget_share.reset();
    o.budget = 5;  // as `ktune tune --budget 5` gives each kernel 5
    c = compare_strategies(spaces[0], o);
    EXPECT_EQ(c.kernels.at(0).budget, 5);
    EXPECT_EQ(c.kernels.at(1).budget, 5);
    EXPECT_EQ(c.budget, 10);
}

// A problem's space of two kernels, a (4 configurations) and b (2), and a run of each over its own: a's every
// configuration at 1 s each, b's two at 10 and 20 s.
struct TwoKernelRuns {
    ReplaySpace space;
    ReplayRun a, b;
};
TwoKernelRuns two_kernel_runs() {
    TwoKernelRuns r;
    r.space.name = "p";
    r.space.entries.resize(6);
    r.space.kernels = {{"a", 0, 4}, {"b", 4, 2}};
    r.a = {"forest", 3, {{3, 1.0, 1}, {1, 2.0, 2}, {0, 3.0, 3}, {2, 4.0, 4}}};
    r.b = {"forest", 3, {{1, 5.0, 10}, {0, 6.0, 30}}};
    return r;
}

TEST(ReplayAlternatives, MergedRunsInterleaveByTheShareOfEachKernelsSpace) {
    const TwoKernelRuns r = two_kernel_runs();
    const ReplayRun m = merge_kernel_runs(r.space, {r.a, r.b});
    EXPECT_EQ(m.strategy, "forest");
    EXPECT_EQ(m.seed, 3u);
    // a's at 0, 1/4, 2/4, 3/4; b's at 0, 1/2: every kernel's first before any second, a tie to the earlier kernel.
    // b's entries after a's 4.
    const std::vector<std::size_t> entries{3, 5, 1, 0, 4, 2};
    const std::vector<double> times{1, 11, 12, 13, 33, 34};  // each evaluation's own cost, in the merged order
    ASSERT_EQ(m.evaluations.size(), entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) {
        EXPECT_EQ(m.evaluations[i].entry, entries[i]) << i;
        EXPECT_DOUBLE_EQ(m.evaluations[i].time_s, times[i]) << i;
    }
    EXPECT_DOUBLE_EQ(m.evaluations[1].value, 5.0);
}

TEST(ReplayAlternatives, MergedRunsStartWithTheKernelTheHistoryExpectsFastest) {
    const TwoKernelRuns r = two_kernel_runs();
    // b expected 1.0, a 1.2 (slower): the ties at 0 and at 1/2 go to b.
    const ReplayRun m = merge_kernel_runs(r.space, {r.a, r.b}, {}, {1.2, 1.0});
    const std::vector<std::size_t> entries{5, 3, 1, 4, 0, 2};
    ASSERT_EQ(m.evaluations.size(), entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) EXPECT_EQ(m.evaluations[i].entry, entries[i]) << i;
    EXPECT_THROW(merge_kernel_runs(r.space, {r.a, r.b}, {}, {1.0}), Error);
}

TEST(ReplayAlternatives, WithTheHistoryAKernelFarBehindIsTriagedToAProbeAndTheLeaderTakesTheRest) {
    test::TempDir dir;
    const std::vector<ReplaySpace> spaces = two_kernels(dir);
    ComparisonOptions o = two_random_runs();
    o.budget = 5;  // each kernel's, as `ktune tune --budget 5`
    o.history = true;
    const std::vector<Comparison> c = compare_strategies(spaces, o);
    for (const Comparison& p : c) {
        EXPECT_EQ(p.kernels.at(0).budget, kTriageProbe) << p.space;       // big: twice small's best elsewhere
        EXPECT_EQ(p.kernels.at(1).budget, 10 - kTriageProbe) << p.space;  // small: its 5 and the 3 big freed
        EXPECT_EQ(p.budget, 10);
        EXPECT_DOUBLE_EQ(p.strategies.at(0).mean_evaluations, 10.0);
    }
    o.history = false;  // in-run: no stored history, no triage (as a tuning into an empty database)
    for (const Comparison& p : compare_strategies(spaces, o)) {
        EXPECT_EQ(p.kernels.at(0).budget, 5);
        EXPECT_EQ(p.kernels.at(1).budget, 5);
    }
}

TEST(ReplayAlternatives, APaceScalesEachKernelsShareInTheMergedRun) {
    ReplaySpace space;
    space.name = "p";
    space.entries.resize(6);
    space.kernels = {{"a", 0, 4}, {"b", 4, 2}};
    ReplayRun a{"forest", 3, {{3, 1.0, 1}, {1, 2.0, 2}}};
    ReplayRun b{"forest", 3, {{1, 5.0, 10}, {0, 6.0, 30}}};
    // a triaged to half its share, b at its own: a's at 0 and 1/2 of its halved space, b's at 0 and 1/2.
    const ReplayRun m = merge_kernel_runs(space, {a, b}, {0.5, 1.0});
    const std::vector<std::size_t> entries{3, 5, 1, 4};
    ASSERT_EQ(m.evaluations.size(), entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) EXPECT_EQ(m.evaluations[i].entry, entries[i]) << i;
    EXPECT_THROW(merge_kernel_runs(space, {a, b}, {1.0}), Error);
}

}  // namespace
}  // namespace ktune
