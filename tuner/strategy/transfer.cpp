#include "tuner/strategy/transfer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>

namespace ktune {

namespace {

// How much less a problem one axis doubled away counts than the problem itself: a quarter, so the nearest problems
// decide and the farther ones break their ties (expected_slowdown, expected_kernel_slowdowns).
double distance_weight(const Problem& a, const Problem& b, const AxisWeights& weights = {}) {
    return std::pow(4.0, -problem_distance(a, b, weights));
}

// How many doublings apart two sizes of one axis are.
double log2_steps(std::int64_t a, std::int64_t b) {
    return std::abs(std::log2(double(std::max<std::int64_t>(a, 1))) - std::log2(double(std::max<std::int64_t>(b, 1))));
}

// The axis along which alone two problems of one dtype and the same axes differ, and by how many doublings.
std::optional<std::pair<std::string, double>> one_axis_apart(const Problem& a, const Problem& b) {
    if (a.dtype != b.dtype || a.shape.size() != b.shape.size()) return std::nullopt;
    std::optional<std::pair<std::string, double>> out;
    for (const auto& [name, v] : a.shape) {
        const auto it = std::ranges::find(b.shape, name, &NamedValues::value_type::first);
        if (it == b.shape.end() || (it->second != v && out)) return std::nullopt;
        if (it->second != v) out.emplace(name, log2_steps(v, it->second));
    }
    return out && out->second > 0 ? out : std::nullopt;
}

// How much slower than its fastest a tuned problem found a configuration: where it is not among the fastest handed on,
// as slow as the slowest of them (it was at least that slow).
double slowdown_at(const TunedProblem& t, const std::string& key) {
    for (std::size_t k = 0; k < t.fastest.size(); ++k)
        if (t.fastest[k].key() == key) return t.slowdown[k];
    return t.slowdown.back();
}

bool knows_slowdowns(const TunedProblem& t) { return !t.slowdown.empty() && t.slowdown.size() == t.fastest.size(); }

}  // namespace

double problem_distance(const Problem& a, const Problem& b, const AxisWeights& weights) {
    // Another width first: the accesses, the vector widths and the bytes moved all differ. A type of the same width
    // (fp16 and bf16) moves the same bytes the same way: as far as one axis doubled.
    constexpr double kOtherWidth = 1e9, kSameWidth = 1;
    double d = a.dtype == b.dtype ? 0 : dtype_bytes(a.dtype) == dtype_bytes(b.dtype) ? kSameWidth : kOtherWidth;
    std::set<std::string> axes;
    for (const auto& [name, v] : a.shape) axes.insert(name);
    for (const auto& [name, v] : b.shape) axes.insert(name);
    auto value = [](const Problem& p, const std::string& axis) -> const std::int64_t* {
        for (const auto& [name, v] : p.shape)
            if (name == axis) return &v;
        return nullptr;
    };
    for (const std::string& axis : axes) {
        const std::int64_t* x = value(a, axis);
        const std::int64_t* y = value(b, axis);
        if (!x || !y) {
            d += 1;
            continue;
        }
        const auto w = weights.find(axis);
        d += (w == weights.end() ? 1.0 : w->second) * log2_steps(*x, *y);
    }
    return d;
}

AxisWeights axis_weights(const std::vector<TunedProblem>& tuned, const Problem* leave_out) {
    const auto left_out = [&](const TunedProblem& t) { return leave_out && t.problem == *leave_out; };
    std::vector<std::string> winners;  // their keys, computed once: the pairs are quadratic in the problems
    for (const TunedProblem& t : tuned)
        winners.push_back(t.fastest.empty() || left_out(t) ? std::string() : t.fastest.front().key());
    std::map<std::string, std::pair<double, int>> loss;  // per axis: the sum of log slowdown per doubling, the pairs
    for (std::size_t i = 0; i < tuned.size(); ++i) {
        if (winners[i].empty()) continue;
        for (const TunedProblem& b : tuned) {
            if (!knows_slowdowns(b) || left_out(b)) continue;
            const auto apart = one_axis_apart(tuned[i].problem, b.problem);
            if (!apart) continue;
            auto& [sum, pairs] = loss[apart->first];
            sum += std::log(std::max(slowdown_at(b, winners[i]), 1.0)) / apart->second;
            ++pairs;
        }
    }
    // Over the mean of all axes, so that the weights average 1 beside a same-width dtype's 1.
    double mean = 0;
    for (const auto& [axis, l] : loss) mean += l.first / l.second / double(loss.size());
    AxisWeights out;
    if (!(mean > 0)) return out;
    for (const auto& [axis, l] : loss) out[axis] = std::max(kMinAxisWeight, l.first / l.second / mean);
    return out;
}

namespace {

// The tuning history's results of each problem but `problem` and those of `exclude`, of runs before `before_run`: of
// the current source where the problem has any, else of any; per problem, ordered by problem key.
std::vector<std::vector<const StoredResult*>> history_by_problem(const std::vector<StoredResult>& stored,
                                                                 const Problem& problem,
                                                                 const std::vector<Problem>& exclude,
                                                                 std::int64_t before_run) {
    // Per problem key: its results of the current source, and of any other.
    std::map<std::string, std::pair<std::vector<const StoredResult*>, std::vector<const StoredResult*>>> by_problem;
    for (const StoredResult& r : stored) {
        if (r.run_id >= before_run || r.problem == problem || std::ranges::find(exclude, r.problem) != exclude.end())
            continue;
        auto& [current, other] = by_problem[r.problem.key()];
        (r.current_source ? current : other).push_back(&r);
    }
    std::vector<std::vector<const StoredResult*>> out;
    for (auto& [key, results] : by_problem) out.push_back(results.first.empty() ? results.second : results.first);
    return out;
}

}  // namespace

std::vector<ProblemResults> history_results(const std::vector<StoredResult>& stored, const Problem& problem,
                                            const std::vector<Problem>& exclude, std::int64_t before_run) {
    std::vector<ProblemResults> out;
    for (auto rs : history_by_problem(stored, problem, exclude, before_run)) {
        std::ranges::stable_sort(rs, {}, [](const StoredResult* r) { return r->rank; });
        ProblemResults p{rs.front()->problem, {}};
        std::unordered_set<std::string> taken;  // another source may have measured a configuration again
        for (const StoredResult* r : rs)
            if (taken.insert(r->config.key()).second) p.times.emplace_back(r->config, std::get<0>(r->rank));
        out.push_back(std::move(p));
    }
    return out;
}

std::vector<TunedProblem> history_winners(const std::vector<StoredResult>& stored, const Problem& problem,
                                          const std::vector<Problem>& exclude, std::int64_t before_run) {
    std::vector<TunedProblem> out;
    for (auto rs : history_by_problem(stored, problem, exclude, before_run)) {
        std::ranges::stable_sort(rs, {}, [](const StoredResult* r) { return r->rank; });
        TunedProblem t{rs.front()->problem, {}, true};
        std::unordered_set<std::string> taken;  // another source may have measured a configuration again
        for (const StoredResult* r : rs)
            if (t.fastest.size() < kTransferDepth && taken.insert(r->config.key()).second) {
                t.fastest.push_back(r->config);
                t.slowdown.push_back(std::get<0>(r->rank) / std::get<0>(rs.front()->rank));
            }
        out.push_back(std::move(t));
    }
    return out;
}

double expected_slowdown(const Problem& problem, const std::vector<TunedProblem>& tuned, const Config& config,
                         const AxisWeights& weights) {
    const std::string key = config.key();
    double sum = 0, total = 0;
    for (const TunedProblem& t : tuned) {
        if (t.problem == problem || !knows_slowdowns(t)) continue;
        const double w = distance_weight(problem, t.problem, weights);
        if (!(w > 0)) continue;  // another width
        sum += w * slowdown_at(t, key);
        total += w;
    }
    return total > 0 ? sum / total : std::numeric_limits<double>::infinity();
}

std::vector<Config> transfer_hints(const Problem& problem, const std::vector<TunedProblem>& tuned,
                                   const std::function<bool(const Config&)>& is_candidate, std::size_t limit,
                                   std::size_t* from_history) {
    // The problem's own results, if there, teach nothing: leave-one-out (expected_slowdown skips them too).
    const AxisWeights weights = axis_weights(tuned, &problem);
    std::vector<const TunedProblem*> order;
    for (const TunedProblem& t : tuned)
        if (!(t.problem == problem)) order.push_back(&t);
    std::stable_sort(order.begin(), order.end(), [&](const TunedProblem* x, const TunedProblem* y) {
        return problem_distance(problem, x->problem, weights) < problem_distance(problem, y->problem, weights);
    });
    // What each problem hands on, in order: its fastest, those that tied its winner (within kTransferTie) first by
    // the slowdown the other problems lead one to expect here.
    std::vector<std::vector<const Config*>> handed(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
        const TunedProblem& t = *order[i];
        for (const Config& c : t.fastest) handed[i].push_back(&c);
        if (!knows_slowdowns(t)) continue;
        // The slowdowns grow: those that tied are the first ones.
        const auto tied = std::size_t(std::ranges::upper_bound(t.slowdown, 1 + kTransferTie) - t.slowdown.begin());
        if (tied < 2) continue;
        std::vector<double> expected(tied);
        for (std::size_t k = 0; k < tied; ++k) expected[k] = expected_slowdown(problem, tuned, t.fastest[k], weights);
        std::vector<std::size_t> ks(tied);
        std::iota(ks.begin(), ks.end(), std::size_t{0});
        std::ranges::stable_sort(ks, {}, [&](std::size_t k) { return expected[k]; });
        for (std::size_t k = 0; k < tied; ++k) handed[i][k] = &t.fastest[ks[k]];
    }
    std::vector<Config> out;
    std::unordered_set<std::string> taken;
    if (from_history) *from_history = 0;
    std::size_t depth = 0;
    for (const auto& h : handed) depth = std::max(depth, h.size());
    for (std::size_t rank = 0; rank < depth; ++rank) {
        for (std::size_t i = 0; i < order.size(); ++i) {
            if (out.size() >= limit) return out;
            if (rank >= handed[i].size()) continue;
            const Config& c = *handed[i][rank];
            const std::string key = c.key();
            if (!taken.contains(key) && is_candidate(c)) {
                taken.insert(key);
                out.push_back(c);
                if (from_history && order[i]->stored) ++*from_history;
            }
        }
    }
    return out;
}

std::size_t transfer_hint_limit(std::size_t candidates, std::optional<std::int64_t> budget) {
    const std::size_t share = std::clamp<std::size_t>(std::size_t(std::ceil(0.10 * double(candidates))), 2, 16);
    if (!budget) return share;
    // Hints that fill the budget would leave a search nothing of its own: a run of small-budget searches would then
    // hand on its first problems' random draws for ever.
    return std::min(share, std::size_t(std::max<std::int64_t>(1, (*budget + 1) / 2)));
}

std::vector<double> expected_kernel_slowdowns(const Problem& problem, const std::vector<std::string>& kernels,
                                              const std::vector<KernelBest>& history) {
    std::map<std::string, std::pair<const Problem*, std::map<std::string, double>>> by_problem;
    for (const KernelBest& b : history) {
        if (b.problem == problem || !(b.best > 0)) continue;
        auto& [p, best] = by_problem[b.problem.key()];
        p = &b.problem;
        auto [it, fresh] = best.emplace(b.kernel, b.best);
        if (!fresh) it->second = std::min(it->second, b.best);
    }
    std::vector<double> sum(kernels.size(), 0), weights(kernels.size(), 0);
    for (const auto& [key, entry] : by_problem) {
        const auto& [p, best] = entry;
        if (best.size() < 2) continue;  // one kernel measured there says nothing about the others
        const double w = distance_weight(problem, *p);
        if (!(w > 0)) continue;
        double fastest = std::numeric_limits<double>::infinity();
        for (const auto& [k, t] : best) fastest = std::min(fastest, t);
        for (std::size_t k = 0; k < kernels.size(); ++k)
            if (const auto it = best.find(kernels[k]); it != best.end()) {
                sum[k] += w * it->second / fastest;
                weights[k] += w;
            }
    }
    std::vector<double> out(kernels.size(), 1.0);
    for (std::size_t k = 0; k < kernels.size(); ++k)
        if (weights[k] > 0) out[k] = sum[k] / weights[k];
    return out;
}

std::vector<std::int64_t> triage_budgets(const std::vector<std::int64_t>& budgets,
                                         const std::vector<std::int64_t>& sizes, const std::vector<double>& expected) {
    std::vector<std::int64_t> out = budgets;
    std::vector<bool> kept(budgets.size());
    std::int64_t freed = 0, kept_budget = 0;
    for (std::size_t k = 0; k < budgets.size(); ++k) {
        kept[k] = !(expected[k] >= kTriageSlowdown);
        if (kept[k]) {
            kept_budget += budgets[k];
        } else {
            out[k] = std::min(budgets[k], kTriageProbe);
            freed += budgets[k] - out[k];
        }
    }
    if (kept_budget == 0 || freed == 0) return budgets;
    // In proportion to the kept kernels' budgets, rounded down, then one each in order until none is left or every kept
    // kernel has all of its space.
    std::int64_t given = 0;
    for (std::size_t k = 0; k < budgets.size(); ++k)
        if (kept[k]) {
            const std::int64_t extra = std::min(sizes[k] - out[k], freed * budgets[k] / kept_budget);
            out[k] += extra;
            given += extra;
        }
    for (bool progress = true; given < freed && progress;) {
        progress = false;
        for (std::size_t k = 0; k < budgets.size() && given < freed; ++k)
            if (kept[k] && out[k] < sizes[k]) {
                ++out[k];
                ++given;
                progress = true;
            }
    }
    return out;
}

Triage triage_budget(const Problem& problem, const std::vector<TriagedKernel>& kernels, std::size_t kernel,
                     const std::vector<KernelBest>& stored, std::int64_t before_run) {
    const TriagedKernel& self = kernels.at(kernel);
    Triage out{std::min(self.budget.value_or(self.configurations), self.configurations), 1};
    if (!self.budget || self.configurations == 0) return out;  // exhaustive, or nothing here
    for (const KernelBest& b : stored)
        if (b.problem == problem) before_run = std::min(before_run, b.run_id);
    std::vector<std::string> names;
    std::vector<std::int64_t> budgets, sizes;
    std::size_t me = 0;
    for (std::size_t k = 0; k < kernels.size(); ++k) {
        if (!kernels[k].budget || kernels[k].configurations == 0) continue;
        if (k == kernel) me = names.size();
        names.push_back(kernels[k].name);
        budgets.push_back(std::min(*kernels[k].budget, kernels[k].configurations));
        sizes.push_back(kernels[k].configurations);
    }
    // Only the searched kernels are weighed against each other: what they free cannot go to one tuned exhaustively.
    std::vector<KernelBest> history;
    for (const KernelBest& b : stored)
        if (b.run_id < before_run && std::ranges::find(names, b.kernel) != names.end()) history.push_back(b);
    const std::vector<double> expected = expected_kernel_slowdowns(problem, names, history);
    out.budget = triage_budgets(budgets, sizes, expected)[me];
    out.expected_slowdown = expected[me];
    return out;
}

}  // namespace ktune
