#include "tuner/replay/comparison.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "tuner/strategy/strategy.hpp"

namespace ktune {

Comparison compare_strategies(const ReplaySpace& space, const ComparisonOptions& o) {
    Comparison c;
    c.space = space.name;
    c.unit = space.unit;
    c.stats = space_statistics(space);
    c.start = cutoff(c.stats, o.methodology.cutoff_percentile_start);
    c.end = cutoff(c.stats, o.methodology.cutoff_percentile);
    c.budget = o.budget.value_or(std::max<std::int64_t>(100, 2 * c.end.evals));
    c.budget = std::min<std::int64_t>(c.budget, std::int64_t(space.entries.size()));
    c.random_expected = random_baseline(c.stats, c.budget, o.methodology);
    std::vector<std::string> names = o.strategies;
    if (names.empty() && o.traced.empty()) {
        names = strategy_names();
        std::erase(names, "exhaustive");
    }
    ReplayOptions ro;
    ro.budget = c.budget;
    ro.batch = o.batch;
    ro.count_strategy_time = o.count_strategy_time;
    for (const std::string& name : names) {
        make_strategy(name, {});  // an unknown name fails before any run
        std::vector<ReplayRun> runs;
        for (int r = 0; r < o.runs; ++r) runs.push_back(replay(space, name, o.seed + std::uint64_t(r), ro));
        c.strategies.push_back(evaluate_runs(c.stats, runs, o.methodology));
    }
    for (const TracedStrategy& t : o.traced) {
        std::vector<ReplayRun> runs;
        for (const TracedRun& r : t.runs) runs.push_back(replay_trace(space, t.name, r, o.count_strategy_time));
        c.strategies.push_back(evaluate_runs(c.stats, runs, o.methodology));
        c.strategies.back().strategy = t.name;  // also where no run evaluated anything
    }
    return c;
}

std::vector<SearchChart> comparison_charts(const Comparison& c) {
    SearchChart by_evals, by_time;
    by_evals.title = fmt::format("{}: best so far against evaluations (mean rank over runs)", c.space);
    by_evals.x_label = "evaluations";
    by_evals.budget_end = double(c.end.evals);
    by_time.title = fmt::format("{}: best so far against time, compilation included", c.space);
    by_time.x_label = "seconds";
    by_time.budget_end = c.end.time_s;
    by_evals.optimum = by_time.optimum = c.stats.optimum;
    by_evals.curves.push_back({"random (expected)", c.random_expected.curve_evals, true});
    by_time.curves.push_back({"random (expected)", c.random_expected.curve_time, true});
    for (const Efficiency& e : c.strategies) {
        by_evals.curves.push_back({e.strategy, e.curve_evals, false});
        by_time.curves.push_back({e.strategy, e.curve_time, false});
    }
    return {by_evals, by_time};
}

}  // namespace ktune
