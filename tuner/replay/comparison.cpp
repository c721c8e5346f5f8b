#include "tuner/replay/comparison.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_set>

#include <fmt/format.h>

#include "tuner/strategy/strategy.hpp"
#include "tuner/strategy/transfer.hpp"

namespace ktune {

namespace {

// The evaluations a run of a space (or of one kernel of it) gets: the budget asked, or the share of the space asked
// (rounded up), or twice the methodology's budget (at least 100); at most the whole space.
std::int64_t run_budget(const ReplaySpace& space, const Cutoff& end, const ComparisonOptions& o) {
    std::int64_t budget = o.budget.value_or(std::max<std::int64_t>(100, 2 * end.evals));
    if (o.budget_share)
        budget = std::max<std::int64_t>(1, std::int64_t(std::ceil(*o.budget_share * double(space.entries.size()))));
    return std::min<std::int64_t>(budget, std::int64_t(space.entries.size()));
}

Comparison comparison_frame(const ReplaySpace& space, const ComparisonOptions& o) {
    Comparison c;
    c.space = space.name;
    c.unit = space.unit;
    c.stats = space_statistics(space);
    c.start = cutoff(c.stats, o.methodology.cutoff_percentile_start);
    c.end = cutoff(c.stats, o.methodology.cutoff_percentile);
    c.budget = run_budget(space, c.end, o);
    c.random_expected = random_baseline(c.stats, c.budget, o.methodology);
    return c;
}

// What one search of a problem runs over: the space, or one kernel of a space of alternatives.
struct Searched {
    std::string kernel;  // whose chain of hints it takes and extends ("" for a space of one kernel)
    ReplaySpace space;
    std::int64_t budget = 0;
    std::unordered_set<std::string> keys;  // its configurations, which alone are hints
};

Searched searched(std::string kernel, ReplaySpace space, std::int64_t budget) {
    Searched s{std::move(kernel), std::move(space), budget, {}};
    for (const ReplayEntry& e : s.space.entries) s.keys.insert(e.config.key());
    return s;
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

// The ok results a run evaluated, fastest first (a tie in the order evaluated, as `ktune tune` reads a finished
// problem's rows): what a later problem of the run learns from, never the space's other, unevaluated entries.
ProblemResults evaluated_results(const ReplaySpace& space, const ReplayRun& run) {
    std::vector<std::size_t> entries;
    for (const Evaluation& e : run.evaluations)
        if (space.entries[e.entry].status == Status::ok) entries.push_back(e.entry);
    std::ranges::stable_sort(entries, {}, [&](std::size_t i) { return space.entries[i].value; });
    ProblemResults out{space.problem.value_or(Problem{}), {}};
    for (std::size_t i : entries) out.times.emplace_back(space.entries[i].config, space.entries[i].value);
    return out;
}

// Every kernel's fastest time at every problem of the spaces.
std::vector<KernelBest> kernel_bests(const std::vector<ReplaySpace>& spaces) {
    std::vector<KernelBest> out;
    for (const ReplaySpace& space : spaces) {
        if (!space.problem) continue;
        for (const ReplayKernel& k : space.kernels) {
            double best = std::numeric_limits<double>::infinity();
            for (std::size_t e = k.begin; e < k.begin + k.size; ++e)
                if (space.entries[e].status == Status::ok) best = std::min(best, space.entries[e].value);
            if (std::isfinite(best)) out.push_back({k.name, *space.problem, best});
        }
    }
    return out;
}

// With the history, each problem's kernels triaged (transfer.hpp) by the other problems' kernel optima, as `ktune tune`
// triages them by the database's: the budgets of its searches, their total, each kernel's pace in the merged run, and
// the slowdown expected of each kernel (which orders the kernels' first proposals in the merged run).
void triage(const std::vector<ReplaySpace>& spaces, std::vector<std::vector<Searched>>& searches,
            std::vector<Comparison>& out, std::vector<std::vector<double>>& pace,
            std::vector<std::vector<double>>& expected, const MethodologyOptions& m) {
    const std::vector<KernelBest> history = kernel_bests(spaces);
    for (std::size_t i = 0; i < spaces.size(); ++i) {
        if (spaces[i].kernels.size() < 2 || !spaces[i].problem) continue;
        std::vector<TriagedKernel> kernels;
        std::vector<std::int64_t> budgets, triaged;
        for (const Searched& s : searches[i]) {
            kernels.push_back({s.kernel, std::int64_t(s.space.entries.size()), s.budget});
            budgets.push_back(s.budget);
        }
        // Leave-one-out: the problem's own optima are not history (triage_budget would read them as its resumed run's).
        std::vector<KernelBest> others;
        for (const KernelBest& b : history)
            if (!(b.problem == *spaces[i].problem)) others.push_back(b);
        for (std::size_t k = 0; k < kernels.size(); ++k) {
            const Triage t =
                triage_budget(*spaces[i].problem, kernels, k, others, std::numeric_limits<std::int64_t>::max());
            triaged.push_back(t.budget);
            expected[i].push_back(t.expected_slowdown);
        }
        if (triaged == budgets) continue;
        out[i].budget = 0;
        for (std::size_t k = 0; k < triaged.size(); ++k) {
            searches[i][k].budget = out[i].kernels[k].budget = triaged[k];
            out[i].budget += triaged[k];
            pace[i].push_back(double(triaged[k]) / double(std::max<std::int64_t>(budgets[k], 1)));
        }
        out[i].random_expected = random_baseline(out[i].stats, out[i].budget, m);
    }
}

// The entries of `kernel` ("" for a space of one kernel) at a space's problem as (first, count); none without a
// problem, or where none of the kernel's configurations is valid there.
std::optional<std::pair<std::size_t, std::size_t>> kernel_entries(const ReplaySpace& space, const std::string& kernel) {
    if (!space.problem) return std::nullopt;
    if (space.kernels.empty())
        return kernel.empty() ? std::optional(std::pair{std::size_t(0), space.entries.size()}) : std::nullopt;
    const auto k = std::ranges::find(space.kernels, kernel, &ReplayKernel::name);
    if (k == space.kernels.end()) return std::nullopt;
    return std::pair{k->begin, k->size};
}

// Every problem's ok results of `kernel` ("" for a space of one kernel), as the tuning history hands them to a strategy
// that learns from them (learn_from: each problem then leaves its own out).
std::vector<ProblemResults> space_results(const std::vector<ReplaySpace>& spaces, const std::string& kernel) {
    std::vector<ProblemResults> out;
    for (const ReplaySpace& space : spaces) {
        const auto range = kernel_entries(space, kernel);
        if (!range) continue;
        const auto [begin, size] = *range;
        ProblemResults r{*space.problem, {}};
        for (std::size_t e = begin; e < begin + size; ++e)
            if (space.entries[e].status == Status::ok)
                r.times.emplace_back(space.entries[e].config, space.entries[e].value);
        if (!r.times.empty()) out.push_back(std::move(r));
    }
    return out;
}

}  // namespace

std::vector<TunedProblem> space_optima(const std::vector<ReplaySpace>& spaces, const std::string& kernel) {
    std::vector<TunedProblem> out;
    for (const ReplaySpace& space : spaces) {
        const auto range = kernel_entries(space, kernel);
        if (!range) continue;
        const auto [begin, size] = *range;
        std::vector<std::size_t> all(size);
        std::iota(all.begin(), all.end(), begin);
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
    // Each problem's searches: the space, or each kernel of a space of alternatives with its own budget, as `ktune
    // tune` searches each kernel of the space file on its own.
    std::vector<std::vector<Searched>> searches(spaces.size());
    std::set<std::string> kernel_names;
    for (std::size_t i = 0; i < spaces.size(); ++i) {
        const ReplaySpace& space = spaces[i];
        out.push_back(comparison_frame(space, o));
        if (space.kernels.empty()) {
            searches[i].push_back(searched("", space, out[i].budget));
            continue;
        }
        out[i].budget = 0;
        for (std::size_t k = 0; k < space.kernels.size(); ++k) {
            ReplaySpace kernel = kernel_space(space, k);
            const std::int64_t budget =
                run_budget(kernel, cutoff(space_statistics(kernel), o.methodology.cutoff_percentile), o);
            out[i].kernels.push_back({space.kernels[k].name, kernel.entries.size(), budget});
            out[i].budget += budget;
            kernel_names.insert(space.kernels[k].name);
            searches[i].push_back(searched(space.kernels[k].name, std::move(kernel), budget));
        }
        out[i].random_expected = random_baseline(out[i].stats, out[i].budget, o.methodology);
    }
    // History: every problem's optima, of each kernel, each problem then seeing all but its own (transfer_hints skips
    // the problem).
    std::map<std::string, std::vector<TunedProblem>> optima;
    std::map<std::string, std::vector<ProblemResults>> results;  // all of them, for a strategy that learns from them
    std::vector<std::vector<double>> pace(spaces.size());  // of each kernel's share, where triage changed its budget
    std::vector<std::vector<double>> expected(spaces.size());  // each kernel's slowdown the history expects
    if (o.history) {
        optima[""] = space_optima(spaces);
        for (const std::string& kernel : kernel_names) optima[kernel] = space_optima(spaces, kernel);
        if (o.transfer) {
            results[""] = space_results(spaces, "");
            for (const std::string& kernel : kernel_names) results[kernel] = space_results(spaces, kernel);
        }
        if (o.transfer) triage(spaces, searches, out, pace, expected, o.methodology);
    }
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
            std::map<std::string, std::vector<TunedProblem>> tuned;  // this run's winners so far, per kernel
            // And every result this run evaluated so far, per kernel, ordered by problem key (as the tuning history),
            // for a strategy that learns from them: without the history, what a tuning into an empty database has.
            std::map<std::string, std::vector<ProblemResults>> evaluated;
            for (std::size_t i = 0; i < spaces.size(); ++i) {
                std::vector<ReplayRun> kernel_runs;
                for (const Searched& s : searches[i]) {
                    ReplayOptions ro;
                    ro.budget = s.budget;
                    ro.batch = o.batch;
                    ro.count_strategy_time = o.count_strategy_time;
                    std::vector<Config> first;
                    if (o.transfer && spaces[i].problem)
                        first = transfer_hints(
                            *spaces[i].problem, o.history ? optima[s.kernel] : tuned[s.kernel],
                            [&](const Config& c) { return s.keys.contains(c.key()); },
                            transfer_hint_limit(s.keys.size(), s.budget));
                    const std::vector<ProblemResults>& others = o.history ? results[s.kernel] : evaluated[s.kernel];
                    if (o.on_learn) o.on_learn(s.space, seed, others);
                    kernel_runs.push_back(replay(s.space, name, seed, ro, first, others));
                    if (!spaces[i].problem) continue;
                    if (TunedProblem fastest = fastest_found(s.space, kernel_runs.back()); !fastest.fastest.empty())
                        tuned[s.kernel].push_back(std::move(fastest));
                    if (!o.transfer || o.history || !o.learn_in_run) continue;
                    if (ProblemResults r = evaluated_results(s.space, kernel_runs.back()); !r.times.empty())
                        insert_in_key_order(evaluated[s.kernel], std::move(r));
                }
                runs[i].push_back(spaces[i].kernels.empty()
                                      ? std::move(kernel_runs.front())
                                      : merge_kernel_runs(spaces[i], kernel_runs, pace[i], expected[i]));
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
