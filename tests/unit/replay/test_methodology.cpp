#include <gtest/gtest.h>

#include <cmath>

#include "tuner/replay/methodology.hpp"

namespace ktune {
namespace {

// Nine configurations timed 1..9, each costing one second.
ReplaySpace nine() {
    ReplaySpace s;
    for (int v = 1; v <= 9; ++v) s.entries.push_back({Config{{{"X", v}}}, Status::ok, double(v), 1.0});
    return s;
}

ReplayRun run_of(const ReplaySpace& s, std::vector<int> values) {
    ReplayRun r;
    r.strategy = "hand";
    double t = 0;
    for (int v : values) {
        t += 1;
        r.evaluations.push_back({std::size_t(v - 1), s.entries[std::size_t(v - 1)].value, t});
    }
    return r;
}

TEST(Methodology, RandomSearchExpectsTheBestOfMDrawsAtPositionMTimesNPlusOneOverMPlusOne) {
    const SpaceStatistics s = space_statistics(nine());
    // Positions 1..9 from the worst (the 9 is 1): M=1 -> 10/2 = 5 -> the 5; M=2 -> 20/3 = 6.67 -> 7 -> the 3;
    // M=3 -> 7.5 -> 7 (half to even, at the 0-based 6.5) -> the 3; M=4 -> 8 -> the 2.
    EXPECT_DOUBLE_EQ(random_expected_best(s, 1), 5);
    EXPECT_DOUBLE_EQ(random_expected_best(s, 2), 3);
    EXPECT_DOUBLE_EQ(random_expected_best(s, 3), 3);
    EXPECT_DOUBLE_EQ(random_expected_best(s, 4), 2);
}

TEST(Methodology, FailedConfigurationsRankBelowTheSlowestFeasibleOne) {
    ReplaySpace sp = nine();
    for (int k = 0; k < 9; ++k) sp.entries.push_back({Config{{{"X", 10 + k}}}, Status::compile_error, 0, 1.0});
    const SpaceStatistics s = space_statistics(sp);
    EXPECT_EQ(s.size, 18u);
    // N = 18: M=1 -> 19/2 = 9.5, 0-based 8.5 -> 8 from the worst, 9 from the best: past the nine feasible ones, so the
    // slowest feasible; M=3 -> 57/4 = 14.25, 0-based 13 from the worst, 4 from the best -> the 5.
    EXPECT_DOUBLE_EQ(random_expected_best(s, 1), 9);
    EXPECT_DOUBLE_EQ(random_expected_best(s, 3), 5);
}

TEST(Methodology, CutoffIsWhereRandomSearchClosesThePercentileOfTheGapFromTheMedian) {
    const SpaceStatistics s = space_statistics(nine());
    EXPECT_DOUBLE_EQ(s.median, 5);
    // 96 %: target 1 + 4 x 0.04 = 1.16, only the 1, at 0-based position 8 from the worst: random search expects to
    // stand there after (8 + 1) / (9 - 8) = 9 evaluations.
    const Cutoff end = cutoff(s, 0.96);
    EXPECT_DOUBLE_EQ(end.target, 1.16);
    EXPECT_EQ(end.evals, 9);
    EXPECT_DOUBLE_EQ(end.time_s, 9.0);
    // 1 %: target 4.96, the 4 at position 5: ceil(6 / 4) = 2.
    EXPECT_EQ(cutoff(s, 0.01).evals, 2);
}

TEST(Methodology, ScoreOfTwoRunsComputedByHand) {
    const ReplaySpace sp = nine();
    const SpaceStatistics s = space_statistics(sp);
    // Budget: evaluations 2..9; random search expects 3, 3, 2, 2 after 2..5, then the optimum (those points are left
    // out). Run a's best so far: 6, 4, 4, 3, 3 (positions from the best 5, 3, 3, 2, 2); run b's: 8, 7, 2, 2, 1
    // (7, 6, 1, 1, 0). Mean positions after 2..5: 4.5 -> 4 (half to even) -> the 5; 2 -> the 3; 1.5 -> 2 -> the 3;
    // 1 -> the 2. Performance: (3 - 5) / (3 - 1) = -1, (3 - 3) / 2 = 0, (2 - 3) / (2 - 1) = -1, (2 - 2) / 1 = 0.
    const std::vector<ReplayRun> runs = {run_of(sp, {6, 4, 9, 3, 8}), run_of(sp, {8, 7, 2, 9, 1})};
    MethodologyOptions o;
    o.time_resolution = 8;  // 2, 3, ..., 9 s: each evaluation costs a second, so the same points as by evaluations
    const Efficiency e = evaluate_runs(s, runs, o);
    EXPECT_NEAR(e.score_evals, -0.5, 1e-12);
    EXPECT_NEAR(e.score_time, -0.5, 1e-12);
    // Within 1 % of the optimum: run a never; run b after 5 of the 9 configurations.
    EXPECT_EQ(e.runs_within[0], 1);
    EXPECT_DOUBLE_EQ(e.fraction_within[0], 5.0 / 9.0);
}

TEST(Methodology, ARunOnRandomSearchsExpectedCurveScoresZero) {
    const ReplaySpace sp = nine();
    const SpaceStatistics s = space_statistics(sp);
    // Best so far after 2..5: 3, 3, 2, 2, as random search expects.
    const Efficiency e = evaluate_runs(s, {run_of(sp, {5, 3, 4, 2, 6})});
    EXPECT_DOUBLE_EQ(e.score_evals, 0);
}

TEST(Methodology, RandomBaselineNeedsNPlusOneOverKPlusOneDrawsToComeWithinReach) {
    const Efficiency e = random_baseline(space_statistics(nine()), 9);
    EXPECT_DOUBLE_EQ(e.fraction_within[0], (10.0 / 2.0) / 9.0);  // K = 1 within 1 %
}

}  // namespace
}  // namespace ktune
