#pragma once
// How efficient a strategy is on a brute-forced space, by the methodology of Willemsen, van Nieuwpoort and van
// Werkhoven ("A methodology for comparing optimization algorithms for auto-tuning", FGCS 2024; the
// autotuning_methodology package of the Auto-Tuning Association):
//
// - the baseline is random search without replacement, computed from the sorted values, not sampled: after M draws
//   from N configurations (failed ones ranked last), its best is the value at the expected position of the best of M
//   draws, M (N + 1) / (M + 1) counted from the worst, 1-based (the package reads it as 0-based, one place better
//   than the expectation: 200 runs of sampled random search score -0.13 against that over evaluations on the
//   convolution space on an A100, -0.01 against this);
// - the budget runs from where that baseline closes 1 % of the gap between the space's median and its optimum to where
//   it closes 96 % (the cutoff), in evaluations, and in time as those evaluations times the median evaluation cost;
// - a strategy's curve is its best-so-far averaged over runs (by rank in the space, as the package does), and at each
//   point of the budget its performance is (random - strategy) / (random - optimum): 0 as good as random search, 1 the
//   optimum, negative worse than random; the score is the mean over the budget (over time unless said otherwise).
//   Points where the baseline already stands at the optimum are left out (the quotient is undefined there).
//
// Also: the fraction of the space a strategy evaluates before it comes within 1 %, 2 % and 5 % of the optimum.
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tuner/replay/replay.hpp"

namespace ktune {

struct SpaceStatistics {
    std::vector<double> sorted;  // feasible values, best first
    std::size_t size = 0;        // every configuration, failed ones included
    double optimum = 0, median = 0;
    double median_cost_s = 0;           // of every configuration's evaluation cost
    double median_cost_per_eval_s = 0;  // the package's "median per feval": feasible median + failed fraction x
                                        // failed median
};

SpaceStatistics space_statistics(const ReplaySpace& space);

// Random search's expected best after `evals` evaluations (the worst feasible value where the expected rank falls
// among the failed configurations).
double random_expected_best(const SpaceStatistics& s, std::int64_t evals);

struct Cutoff {
    double target = 0;       // optimum + (median - optimum) (1 - percentile)
    std::int64_t evals = 0;  // random search's evaluations to reach it
    double time_s = 0;       // evals x the median evaluation cost
};
Cutoff cutoff(const SpaceStatistics& s, double percentile);

struct MethodologyOptions {
    double cutoff_percentile = 0.96;
    double cutoff_percentile_start = 0.01;
    int time_resolution = 1000;  // points of the time budget
};

inline constexpr std::array<double, 3> kWithin = {0.01, 0.02, 0.05};
inline constexpr double kSmallShare = 0.10;  // "within 2 % after at most 10 % of the space" (docs/search.md)
// The evaluations that make kSmallShare of a space of `size` configurations (at least 1).
std::int64_t small_share_evals(std::int64_t size);

struct Efficiency {
    std::string strategy;
    int runs = 0;
    double mean_evaluations = 0;  // per run (a strategy may stop before the budget)
    double score_time = 0, score_evals = 0;
    // Per kWithin: the mean fraction of the space evaluated before the best came within it of the optimum, over the
    // runs that got there, and how many did.
    std::array<double, 3> fraction_within{};
    std::array<int, 3> runs_within{};
    // Per kWithin: the share of the runs that came within it after evaluating at most kSmallShare of the space (for
    // random search, its probability).
    std::array<double, 3> share_within_small{};
    // The averaged best-so-far, for the charts: (evaluations, value) at every evaluation up to the longest run and
    // (seconds, value) over the time budget.
    std::vector<std::pair<double, double>> curve_evals, curve_time;
};

Efficiency evaluate_runs(const SpaceStatistics& s, const std::vector<ReplayRun>& runs,
                         const MethodologyOptions& o = {});
// The random-search baseline as an Efficiency: score 0 by definition, the analytic expected fraction to come within
// each kWithin ((N + 1) / (K + 1) draws for K such configurations among N), and its expected curves.
Efficiency random_baseline(const SpaceStatistics& s, std::int64_t max_evals, const MethodologyOptions& o = {});

}  // namespace ktune
