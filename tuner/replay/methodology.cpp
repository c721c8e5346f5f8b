#include "tuner/replay/methodology.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace ktune {
namespace {

double median_of(std::vector<double> v) {
    if (v.empty()) return 0;
    std::ranges::sort(v);
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Rounding half to even, as the methodology package (Python's round) does.
std::int64_t round_even(double x) { return std::int64_t(std::nearbyint(x)); }

// The position of a value among the feasible ones (0: the optimum).
double rank_of(const SpaceStatistics& s, double v) {
    return double(std::ranges::lower_bound(s.sorted, v) - s.sorted.begin());
}

double value_at_rank(const SpaceStatistics& s, double rank) {
    const auto r = std::clamp<std::int64_t>(round_even(rank), 0, std::int64_t(s.sorted.size()) - 1);
    return s.sorted[std::size_t(r)];
}

// A run's best-so-far by evaluations (index k: after k + 1 evaluations); NaN until a feasible one.
std::vector<double> best_so_far(const ReplayRun& run) {
    std::vector<double> out;
    double best = std::numeric_limits<double>::quiet_NaN();
    for (const Evaluation& e : run.evaluations) {
        if (!std::isnan(e.value) && (std::isnan(best) || e.value < best)) best = e.value;
        out.push_back(best);
    }
    return out;
}

double standardised(double random, double strategy, double optimum) { return (random - strategy) / (random - optimum); }

}  // namespace

SpaceStatistics space_statistics(const ReplaySpace& space) {
    SpaceStatistics s;
    s.size = space.entries.size();
    std::vector<double> costs, feasible_costs, failed_costs;
    for (const ReplayEntry& e : space.entries) {
        costs.push_back(e.cost_s);
        if (e.status == Status::ok) {
            s.sorted.push_back(e.value);
            feasible_costs.push_back(e.cost_s);
        } else {
            failed_costs.push_back(e.cost_s);
        }
    }
    if (s.sorted.empty()) throw Error(ErrorCategory::bad_input, "no configuration of the space has a time", space.name);
    std::ranges::sort(s.sorted);
    s.optimum = s.sorted.front();
    s.median = median_of(s.sorted);
    s.median_cost_s = median_of(costs);
    s.median_cost_per_eval_s = median_of(feasible_costs);
    if (!failed_costs.empty())
        s.median_cost_per_eval_s += double(failed_costs.size()) / double(s.size) * median_of(failed_costs);
    return s;
}

double random_expected_best(const SpaceStatistics& s, std::int64_t evals) {
    const double n = double(s.size);
    const double m = double(std::max<std::int64_t>(evals, 0));
    // The best of m draws from positions 1..n has the expected position m (n + 1) / (m + 1), counted from the worst
    // (failed configurations first); minus one for a position in the array. The package indexes the array with the
    // 1-based position, one place better than the expectation (the best of one draw from 1..9 would be 4, not 5).
    const std::int64_t from_worst =
        std::min<std::int64_t>(std::int64_t(s.size) - 1, round_even(m * (n + 1) / (m + 1) - 1));
    const std::int64_t from_best = std::int64_t(s.size) - 1 - from_worst;
    return s.sorted[std::size_t(std::min<std::int64_t>(from_best, std::int64_t(s.sorted.size()) - 1))];
}

Cutoff cutoff(const SpaceStatistics& s, double percentile) {
    Cutoff c;
    c.target = s.optimum + (s.median - s.optimum) * (1 - percentile);
    // The first position, counted from the worst feasible value, at or below the target.
    const std::size_t n = s.sorted.size();
    std::size_t i = 0;
    while (i < n && s.sorted[n - 1 - i] > c.target) ++i;
    // Random search's expected position after k draws, m (n + 1) / (m + 1) - 1, reaches i from k = (i + 1) / (n - i).
    c.evals = i >= n ? std::int64_t(n) : std::int64_t(std::ceil(double(i + 1) / double(n - i)));
    c.evals = std::max<std::int64_t>(c.evals, 1);
    c.time_s = double(c.evals) * s.median_cost_s;
    return c;
}

Efficiency evaluate_runs(const SpaceStatistics& s, const std::vector<ReplayRun>& runs, const MethodologyOptions& o) {
    Efficiency eff;
    eff.runs = int(runs.size());
    if (runs.empty()) return eff;
    eff.strategy = runs.front().strategy;
    const Cutoff start = cutoff(s, o.cutoff_percentile_start), end = cutoff(s, o.cutoff_percentile);
    const double worst_rank = double(s.sorted.size() - 1);

    // Over evaluations.
    std::vector<std::vector<double>> bests;
    std::size_t longest = 0;
    for (const ReplayRun& r : runs) {
        bests.push_back(best_so_far(r));
        longest = std::max(longest, bests.back().size());
        eff.mean_evaluations += double(r.evaluations.size()) / double(runs.size());
    }
    // The rank-averaged best after k evaluations; a run that stopped keeps its last best.
    auto mean_best_at = [&](std::size_t k) {
        double sum = 0;
        for (const auto& b : bests) {
            const double v = b.empty() ? std::numeric_limits<double>::quiet_NaN() : b[std::min(k, b.size()) - 1];
            sum += std::isnan(v) ? worst_rank : rank_of(s, v);
        }
        return value_at_rank(s, sum / double(bests.size()));
    };
    for (std::size_t k = 1; k <= longest; ++k) eff.curve_evals.emplace_back(double(k), mean_best_at(k));
    double total = 0;
    int points = 0;
    for (std::int64_t k = start.evals; k <= end.evals; ++k) {
        const double random = random_expected_best(s, k);
        if (random <= s.optimum) continue;
        total += standardised(random, mean_best_at(std::size_t(k)), s.optimum);
        ++points;
    }
    eff.score_evals = points ? total / points : 0;

    // Over time.
    std::vector<std::vector<double>> times;  // per run, the time at which each evaluation ended
    for (const ReplayRun& r : runs) {
        times.emplace_back();
        for (const Evaluation& e : r.evaluations) times.back().push_back(e.time_s);
    }
    auto best_at_time = [&](std::size_t run, double t) {
        const auto done = std::size_t(std::ranges::upper_bound(times[run], t) - times[run].begin());
        return done ? bests[run][done - 1] : std::numeric_limits<double>::quiet_NaN();
    };
    total = 0;
    points = 0;
    const int steps = std::max(o.time_resolution, 2);
    for (int p = 0; p < steps; ++p) {
        const double t = start.time_s + (end.time_s - start.time_s) * p / (steps - 1);
        double sum = 0;
        for (std::size_t r = 0; r < runs.size(); ++r) {
            const double v = best_at_time(r, t);
            sum += std::isnan(v) ? worst_rank : rank_of(s, v);
        }
        const double strategy = value_at_rank(s, sum / double(runs.size()));
        eff.curve_time.emplace_back(t, strategy);
        const auto evals = std::max<std::int64_t>(1, round_even(t / s.median_cost_per_eval_s));
        const double random = random_expected_best(s, evals);
        if (random <= s.optimum) continue;
        total += standardised(random, strategy, s.optimum);
        ++points;
    }
    eff.score_time = points ? total / points : 0;

    for (std::size_t w = 0; w < kWithin.size(); ++w) {
        double sum = 0;
        int small = 0;
        for (const auto& b : bests) {
            const auto hit = std::ranges::find_if(b, [&](double v) { return v <= s.optimum * (1 + kWithin[w]); });
            if (hit == b.end()) continue;
            sum += double(hit - b.begin() + 1) / double(s.size);
            ++eff.runs_within[w];
            if (hit - b.begin() + 1 <= small_share_evals(std::int64_t(s.size))) ++small;
        }
        eff.share_within_small[w] = bests.empty() ? 0 : double(small) / double(bests.size());
        eff.fraction_within[w] =
            eff.runs_within[w] ? sum / eff.runs_within[w] : std::numeric_limits<double>::quiet_NaN();
    }
    return eff;
}

std::int64_t small_share_evals(std::int64_t size) {
    return std::max<std::int64_t>(1, std::int64_t(std::floor(kSmallShare * double(size) + 1e-9)));
}

Efficiency random_baseline(const SpaceStatistics& s, std::int64_t max_evals, const MethodologyOptions& o) {
    Efficiency eff;
    eff.strategy = "random (expected)";
    for (std::int64_t k = 1; k <= max_evals; ++k) eff.curve_evals.emplace_back(double(k), random_expected_best(s, k));
    const Cutoff start = cutoff(s, o.cutoff_percentile_start), end = cutoff(s, o.cutoff_percentile);
    const int steps = std::max(o.time_resolution, 2);
    for (int p = 0; p < steps; ++p) {
        const double t = start.time_s + (end.time_s - start.time_s) * p / (steps - 1);
        eff.curve_time.emplace_back(
            t, random_expected_best(s, std::max<std::int64_t>(1, round_even(t / s.median_cost_per_eval_s))));
    }
    for (std::size_t w = 0; w < kWithin.size(); ++w) {
        const double k = double(std::ranges::upper_bound(s.sorted, s.optimum * (1 + kWithin[w])) - s.sorted.begin());
        eff.fraction_within[w] = (double(s.size) + 1) / (k + 1) / double(s.size);
        // 1 - C(N - K, n) / C(N, n): some of the K hit among n draws without replacement.
        const auto n = small_share_evals(std::int64_t(s.size));
        double miss = 1;
        for (std::int64_t j = 0; j < n; ++j)
            miss *= std::max(0.0, (double(s.size) - k - double(j)) / (double(s.size) - double(j)));
        eff.share_within_small[w] = 1 - miss;
    }
    return eff;
}

}  // namespace ktune
