#pragma once
// Strategies compared on one brute-forced space: each replayed over many seeds, scored by the methodology
// (methodology.hpp) beside random search's analytic expectation, with the curves for the charts.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reports/search_chart.hpp"
#include "tuner/replay/methodology.hpp"
#include "tuner/replay/replay.hpp"
#include "tuner/strategy/transfer.hpp"

namespace ktune {

// Another tuner's runs on the space, scored beside ktune's strategies (replay_trace).
struct TracedStrategy {
    std::string name;
    std::vector<TracedRun> runs;
};

struct ComparisonOptions {
    std::vector<std::string> strategies;  // empty: every strategy but exhaustive (none when traced is set)
    std::map<std::string, std::vector<TracedStrategy>> traced;  // by ReplaySpace::name: another tuner's runs
    int runs = 20;                                              // seeds seed, seed + 1, ...
    std::uint64_t seed = 1;
    // Evaluations per run; default: twice the methodology's budget (at least 100). Of a space of alternative kernels,
    // each kernel's, as `ktune tune --budget` gives each kernel its budget (the default then of each kernel's space).
    std::optional<std::int64_t> budget = std::nullopt;
    // Instead, this share of each space (rounded up, as `auto` does; of each kernel's space, as `auto` gives each
    // kernel its share): a problem of an op hands on to the next what its strategy found within it, as a tuning with
    // that budget would.
    std::optional<double> budget_share = std::nullopt;
    std::optional<int> batch = std::nullopt;
    bool count_strategy_time = true;
    // Spaces of one op's problems (from the store) are replayed in order, each run starting from the best
    // configurations the same strategy and seed found at the problems before it, as `ktune tune` does (transfer.hpp).
    bool transfer = true;
    // Instead: each problem starts from the optima of all the other problems replayed (never its own), as `ktune tune`
    // starts a new problem from a database that holds the others (leave-one-out). Needs `transfer`.
    bool history = false;
    // In-run, a problem's strategy also learns from every ok result the same strategy and seed evaluated at the
    // problems before it (learn_from: forest's history model), as `ktune tune` hands a search the results of the run's
    // finished problems. Only what was evaluated, never a space's other entries.
    bool learn_in_run = true;
    // Where set, called before each search (a problem's, or one kernel's of a space of alternatives) with its space,
    // its seed and what its strategy is given to learn from: what each model saw.
    std::function<void(const ReplaySpace&, std::uint64_t, const std::vector<ProblemResults>&)> on_learn = nullptr;
    MethodologyOptions methodology = {};
};

// A kernel of a space of alternatives, searched on its own.
struct ComparedKernel {
    std::string name;
    std::size_t configurations = 0;
    std::int64_t budget = 0;  // evaluations per run
};

struct Comparison {
    std::string space;
    std::string unit;
    SpaceStatistics stats;  // of the whole space: every kernel's configurations
    Cutoff start, end;
    std::int64_t budget = 0;  // evaluations per run (the kernels' together)
    Efficiency random_expected;
    std::vector<Efficiency> strategies;
    std::vector<ComparedKernel> kernels;  // a space of alternatives' (ReplaySpace::kernels); else empty
};

// ktune's strategies, then the traced ones.
Comparison compare_strategies(const ReplaySpace& space, const ComparisonOptions& o);
// The fastest configurations (kTransferDepth: the optimum first) of each space that belongs to a problem, for
// o.history: of its kernel named `kernel` in a space of alternatives, of the whole space in a space of one kernel (with
// `kernel` empty).
std::vector<TunedProblem> space_optima(const std::vector<ReplaySpace>& spaces, const std::string& kernel = "");
// One comparison per space; with o.transfer, problems after the first start from their predecessors' winners, or with
// o.history every problem from the other problems' optima. Each kernel of a space of alternatives is searched on its
// own, from its own kernel's winners at the other problems, and the space's runs merge its kernels'
// (merge_kernel_runs).
std::vector<Comparison> compare_strategies(const std::vector<ReplaySpace>& spaces, const ComparisonOptions& o);
// Two charts: best so far against evaluations, and against time.
std::vector<SearchChart> comparison_charts(const Comparison& c);

}  // namespace ktune
