// Model-based search, after Helion's LFBO pattern search: a random forest learns the logarithm of the time from the
// results so far (an infeasible configuration as twice the slowest time seen, so the model steers away from what
// fails) and orders the moves. Three quarters of a batch are pattern search's moves (one step along one axis from
// the fastest configuration seen whose such neighbours are not all proposed, then the next fastest), the ones the
// model predicts fastest first; the rest are the candidates the model ranks best by a lower confidence bound (mean
// minus half the trees' spread: where the trees disagree is worth a look) among those up to two steps along one axis
// from the ten fastest, the whole axes through the three fastest, and 1024 random others. The model alone got stuck:
// a forest cannot extrapolate, so it kept to the region it knew (on the convolution space on an A4000 of
// docs/search.md it scored at random search's level). Until max(20, 2 batches, 2 x parameters + 2) results are in,
// the batches are random, or, after hints from similar problems (start_with), around the fastest; past 512 results the
// model learns from the 256 fastest and 256 others drawn at random, which keeps a batch's cost flat however long the
// search runs.
//
// With the tuning history (learn_from), a second forest learns each other problem's log slowdown (time over its
// fastest) from the problem's axes and the configuration's values, and predicts it at every candidate here: until the
// search's own model has enough results, the batches after the hints take that prediction's best and the moves around
// the hints in turn, and then the search's model learns what this problem adds to it (its time less the prediction). On
// the GEMM space of docs/search.md this reaches optima that no other problem had among its three fastest.
#include <algorithm>
#include <cmath>
#include <optional>

#include "tuner/strategy/adaptive.hpp"
#include "tuner/strategy/random_forest.hpp"
#include "tuner/strategy/strategies.hpp"

namespace ktune {
namespace {

class ForestStrategy final : public AdaptiveStrategy {
public:
    using AdaptiveStrategy::AdaptiveStrategy;
    std::string_view name() const override { return "forest"; }

private:
    static constexpr std::size_t kGlobalPool = 1024, kLocalCentres = 10, kAxisCentres = 3;
    static constexpr double kExploration = 0.5, kPatternShare = 0.75;

    // Before the model has enough to learn from, a search that started from similar problems' winners spends its
    // batches around them (one step along one axis from the fastest, then the next fastest); random draws only fill
    // what is left. With budgets of a few evaluations (a tenth of a small space), random draws there cost what the
    // hints had gained: docs/search.md.
    std::vector<std::size_t> local_moves(std::size_t n) {
        std::vector<std::size_t> out;
        for (std::size_t centre : ranked()) {
            for (std::size_t j : unproposed(grid().neighbours(centre)))
                if (out.size() < n && std::find(out.begin(), out.end(), j) == out.end()) out.push_back(j);
            if (out.size() >= n) break;
        }
        return out;
    }

    std::vector<double> features(std::size_t i) const {
        const GridPoint& p = grid().point(i);
        return std::vector<double>(p.begin(), p.end());
    }

    // The history model's features of a configuration at a problem: log2 of each of this problem's axes and of the
    // dtype's width, then each of this space's parameters' values. None where the other problem or configuration
    // lacks one of them.
    std::optional<std::vector<double>> prior_features(const Problem& p, const Config& c) const {
        std::vector<double> out;
        for (const auto& [axis, v] : problem().shape) {
            const auto it = std::ranges::find(p.shape, axis, &NamedValues::value_type::first);
            if (it == p.shape.end()) return std::nullopt;
            out.push_back(std::log2(double(std::max<std::int64_t>(it->second, 1))));
        }
        out.push_back(std::log2(double(dtype_bytes(p.dtype))));
        for (const auto& [name, v] : candidate(0).values) {
            const auto it = std::ranges::find(c.values, name, &NamedValues::value_type::first);
            if (it == c.values.end()) return std::nullopt;
            out.push_back(double(it->second));
        }
        return out;
    }

    bool learns_from_others() const override { return true; }

    Learned learn_from(const std::vector<ProblemResults>& others) override {
        m_prior.clear();
        if (grid().size() == 0) return {};
        std::vector<std::vector<double>> x;
        std::vector<double> y;
        std::int64_t problems = 0;
        for (const ProblemResults& r : others) {
            if (r.problem == problem() || r.times.empty()) continue;
            double fastest = r.times.front().second;
            for (const auto& [c, t] : r.times) fastest = std::min(fastest, t);
            if (!(fastest > 0)) continue;
            const std::size_t rows_before = x.size();
            for (const auto& [c, t] : r.times)
                if (auto f = prior_features(r.problem, c)) {
                    x.push_back(std::move(*f));
                    y.push_back(std::log(t / fastest));
                }
            problems += x.size() > rows_before;
        }
        if (x.size() < kPriorMinRows) return {};
        RandomForest::Options o;
        o.max_samples = kPriorSamples;
        std::mt19937_64 r = rng();  // a copy: fitting the history model takes no draws from the search's generator
        RandomForest prior;
        prior.fit(x, y, r, o);
        for (std::size_t i = 0; i < grid().size(); ++i)
            m_prior.push_back(prior.predict(*prior_features(problem(), candidate(i))).first);
        return {problems, std::int64_t(x.size())};
    }

    // Unproposed candidates in the history model's order, best first, at most n.
    std::vector<std::size_t> prior_picks(std::size_t n) const {
        std::vector<std::pair<double, std::size_t>> scored;
        for (std::size_t i = 0; i < m_prior.size(); ++i)
            if (!proposed(i)) scored.emplace_back(m_prior[i], i);
        std::ranges::sort(scored);
        std::vector<std::size_t> out;
        for (std::size_t k = 0; k < std::min(n, scored.size()); ++k) out.push_back(scored[k].second);
        return out;
    }

    // The model's mean and spread at candidate i: the history's prediction plus what this problem's results add.
    std::pair<double, double> predict(std::size_t i) const {
        auto [mean, spread] = m_model.predict(features(i));
        if (!m_prior.empty()) mean += m_prior[i];
        return {mean, spread};
    }

    // Before the search's own model: the history model's best, one by one in turn with what the search does without
    // it: the moves around the hints (on a space of a few dozen configurations those moves are most of what the budget
    // reaches, and the model's first picks alone missed some optima among them), or, without hints, random draws. The
    // model is a guess from other problems, and where this one is of another regime its first picks can all be far
    // off: at the GEMM's first M = 64 problem after larger ones no earlier winner is valid, and a budget of six went to
    // picks 1.29 to 1.5 times the optimum's time in 17 of 20 runs (docs/search.md). Without the history model, the
    // moves alone, or nothing (random draws fill the batch).
    std::vector<std::size_t> early_moves(std::size_t n) {
        const std::vector<std::size_t> modelled = prior_picks(n);  // none without history
        const std::vector<std::size_t> own = hinted()           ? local_moves(n)
                                             : modelled.empty() ? std::vector<std::size_t>{}
                                                                : random_unproposed(n);
        std::vector<std::size_t> out;
        for (std::size_t k = 0; k < std::max(modelled.size(), own.size()); ++k)
            for (const std::vector<std::size_t>* from : {&modelled, &own})
                if (k < from->size() && out.size() < n && std::ranges::find(out, (*from)[k]) == out.end())
                    out.push_back((*from)[k]);
        return out;
    }

    std::vector<std::size_t> choose(std::size_t n) override {
        const std::size_t warmup = std::max({std::size_t(20), 2 * batch_size(), 2 * grid().dims() + 2});
        if (observed().size() < warmup) return early_moves(n);
        std::vector<std::vector<double>> x;
        std::vector<double> y;
        const double infeasible = std::log(penalty());
        for (std::size_t i : training_set()) {
            x.push_back(features(i));
            y.push_back(*cost(i) == kInfeasible ? infeasible : std::log(*cost(i)));
            if (!m_prior.empty()) y.back() -= m_prior[i];
        }
        m_model.fit(x, y, rng());

        // The pool: around the fastest (pattern search's moves, as Helion's LFBO pattern search ranks them with its
        // model) and a random sample of the rest, so the model can also point far away.
        std::vector<std::size_t> pool = random_unproposed(kGlobalPool);
        const std::vector<std::size_t> top = ranked();
        for (std::size_t k = 0; k < std::min(kLocalCentres, top.size()); ++k) {
            for (std::size_t j : unproposed(grid().neighbours(top[k], 2))) pool.push_back(j);
            if (k < kAxisCentres)
                for (std::size_t j : unproposed(grid().axis_neighbours(top[k]))) pool.push_back(j);
        }
        std::ranges::sort(pool);
        pool.erase(std::unique(pool.begin(), pool.end()), pool.end());
        std::vector<std::pair<double, std::size_t>> scored;
        scored.reserve(pool.size());
        for (std::size_t i : pool) {
            const auto [mean, spread] = predict(i);
            scored.emplace_back(mean - kExploration * spread, i);
        }
        const std::size_t wanted = std::min(n >= 4 ? n - 1 : n, scored.size());
        std::ranges::sort(scored);
        // Pattern search's moves first, best first, each centre's neighbours in the model's order.
        std::vector<std::size_t> out;
        const auto local = std::size_t(std::ceil(kPatternShare * double(wanted)));
        for (std::size_t centre : top) {
            std::vector<std::pair<double, std::size_t>> moves;
            for (std::size_t j : unproposed(grid().neighbours(centre))) moves.emplace_back(predict(j).first, j);
            std::ranges::sort(moves);
            for (const auto& move : moves)
                if (out.size() < local) out.push_back(move.second);
            if (out.size() >= local) break;
        }
        // Then the model's own picks.
        for (std::size_t k = 0; k < scored.size() && out.size() < wanted; ++k)
            if (std::ranges::find(out, scored[k].second) == out.end()) out.push_back(scored[k].second);
        return out;
    }

    std::vector<std::size_t> training_set() {
        if (observed().size() <= 2 * kTrainingHalf) return observed();
        std::vector<std::size_t> fastest = ranked();
        if (fastest.size() > kTrainingHalf) fastest.resize(kTrainingHalf);
        std::vector<std::size_t> rest;
        for (std::size_t i : observed())
            if (std::ranges::find(fastest, i) == fastest.end()) rest.push_back(i);
        std::shuffle(rest.begin(), rest.end(), rng());
        rest.resize(std::min(rest.size(), 2 * kTrainingHalf - fastest.size()));
        fastest.insert(fastest.end(), rest.begin(), rest.end());
        return fastest;
    }

    static constexpr std::size_t kTrainingHalf = 256;
    // The history model: at least this many rows, or none; at most kPriorSamples rows drawn for each tree (on the
    // GEMM space's 35 problems, 13,000 rows, 1024 lost one problem of the three it gains, docs/search.md).
    static constexpr std::size_t kPriorMinRows = 20, kPriorSamples = 4096;
    RandomForest m_model;
    std::vector<double> m_prior;  // the history model's log slowdown at each candidate; empty without history
};

}  // namespace

std::unique_ptr<SearchStrategy> make_forest_strategy(const StrategyOptions& o) {
    return std::make_unique<ForestStrategy>(o);
}

}  // namespace ktune
