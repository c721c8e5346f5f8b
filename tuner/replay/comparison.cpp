#include "tuner/replay/comparison.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <unordered_set>

#include <fmt/format.h>

#include "tuner/strategy/strategy.hpp"
#include "tuner/strategy/transfer.hpp"

namespace ktune {

namespace {

Comparison comparison_frame(const ReplaySpace& space, const ComparisonOptions& o) {
    Comparison c;
    c.space = space.name;
    c.unit = space.unit;
    c.stats = space_statistics(space);
    c.start = cutoff(c.stats, o.methodology.cutoff_percentile_start);
    c.end = cutoff(c.stats, o.methodology.cutoff_percentile);
    c.budget = o.budget.value_or(std::max<std::int64_t>(100, 2 * c.end.evals));
    if (o.budget_share)
        c.budget = std::max<std::int64_t>(1, std::int64_t(std::ceil(*o.budget_share * double(space.entries.size()))));
    c.budget = std::min<std::int64_t>(c.budget, std::int64_t(space.entries.size()));
    c.random_expected = random_baseline(c.stats, c.budget, o.methodology);
    return c;
}

// The fastest configurations (kTransferDepth) among `entries` of the space at `problem`, fastest first, with how close
// each came to the first.
TunedProblem fastest_of(const ReplaySpace& space, std::vector<std::size_t> entries, bool stored) {
    std::erase_if(entries, [&](std::size_t i) { return space.entries[i].status != Status::ok; });
    std::ranges::stable_sort(entries, {}, [&](std::size_t i) { return space.entries[i].value; });
    TunedProblem out{space.problem.value_or(Problem{}), {}, stored};
    for (std::size_t k = 0; k < std::min(entries.size(), kTransferDepth); ++k) {
        out.fastest.push_back(space.entries[entries[k]].config);
        out.slowdown.push_back(space.entries[entries[k]].value / space.entries[entries.front()].value);
    }
    return out;
}

// The fastest configurations a run found.
TunedProblem fastest_found(const ReplaySpace& space, const ReplayRun& run) {
    std::vector<std::size_t> entries;
    for (const Evaluation& e : run.evaluations) entries.push_back(e.entry);
    return fastest_of(space, entries, false);
}

}  // namespace

std::vector<TunedProblem> space_optima(const std::vector<ReplaySpace>& spaces) {
    std::vector<TunedProblem> out;
    for (const ReplaySpace& space : spaces) {
        if (!space.problem) continue;
        std::vector<std::size_t> all(space.entries.size());
        std::iota(all.begin(), all.end(), std::size_t{0});
        if (TunedProblem fastest = fastest_of(space, all, true); !fastest.fastest.empty())
            out.push_back(std::move(fastest));
    }
    return out;
}

Comparison compare_strategies(const ReplaySpace& space, const ComparisonOptions& o) {
    return std::move(compare_strategies(std::vector<ReplaySpace>{space}, o).front());
}

std::vector<Comparison> compare_strategies(const std::vector<ReplaySpace>& spaces, const ComparisonOptions& o) {
    std::vector<Comparison> out;
    for (const ReplaySpace& space : spaces) out.push_back(comparison_frame(space, o));
    // History: every problem's optimum, each problem then seeing all but its own (transfer_hints skips the problem).
    const std::vector<TunedProblem> optima = o.history ? space_optima(spaces) : std::vector<TunedProblem>{};
    std::vector<std::string> names = o.strategies;
    if (names.empty() && o.traced.empty()) {
        names = strategy_names();
        std::erase(names, "exhaustive");
    }
    for (const std::string& name : names) {
        make_strategy(name, {});  // an unknown name fails before any run
        std::vector<std::vector<ReplayRun>> runs(spaces.size());
        for (int r = 0; r < o.runs; ++r) {
            const std::uint64_t seed = o.seed + std::uint64_t(r);
            std::vector<TunedProblem> tuned;  // this run's winners so far, for transfer
            for (std::size_t i = 0; i < spaces.size(); ++i) {
                ReplayOptions ro;
                ro.budget = out[i].budget;
                ro.batch = o.batch;
                ro.count_strategy_time = o.count_strategy_time;
                std::vector<Config> first;
                if (o.transfer && spaces[i].problem) {
                    std::unordered_set<std::string> keys;
                    for (const ReplayEntry& e : spaces[i].entries) keys.insert(e.config.key());
                    first = transfer_hints(
                        *spaces[i].problem, o.history ? optima : tuned,
                        [&](const Config& c) { return keys.contains(c.key()); },
                        transfer_hint_limit(keys.size(), out[i].budget));
                }
                runs[i].push_back(replay(spaces[i], name, seed, ro, first));
                if (spaces[i].problem)
                    if (TunedProblem fastest = fastest_found(spaces[i], runs[i].back()); !fastest.fastest.empty())
                        tuned.push_back(std::move(fastest));
            }
        }
        for (std::size_t i = 0; i < spaces.size(); ++i)
            out[i].strategies.push_back(evaluate_runs(out[i].stats, runs[i], o.methodology));
    }
    for (std::size_t i = 0; i < spaces.size(); ++i) {
        const auto it = o.traced.find(spaces[i].name);
        if (it == o.traced.end()) continue;
        for (const TracedStrategy& t : it->second) {
            std::vector<ReplayRun> runs;
            for (const TracedRun& r : t.runs) runs.push_back(replay_trace(spaces[i], t.name, r, o.count_strategy_time));
            out[i].strategies.push_back(evaluate_runs(out[i].stats, runs, o.methodology));
            out[i].strategies.back().strategy = t.name;  // also where no run evaluated anything
        }
    }
    return out;
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
