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
#include <algorithm>
#include <cmath>

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

    std::vector<std::size_t> choose(std::size_t n) override {
        const std::size_t warmup = std::max({std::size_t(20), 2 * batch_size(), 2 * grid().dims() + 2});
        if (observed().size() < warmup) return hinted() ? local_moves(n) : std::vector<std::size_t>{};
        std::vector<std::vector<double>> x;
        std::vector<double> y;
        const double infeasible = std::log(penalty());
        for (std::size_t i : training_set()) {
            x.push_back(features(i));
            y.push_back(*cost(i) == kInfeasible ? infeasible : std::log(*cost(i)));
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
            const auto [mean, spread] = m_model.predict(features(i));
            scored.emplace_back(mean - kExploration * spread, i);
        }
        const std::size_t wanted = std::min(n >= 4 ? n - 1 : n, scored.size());
        std::ranges::sort(scored);
        // Pattern search's moves first, best first, each centre's neighbours in the model's order.
        std::vector<std::size_t> out;
        const auto local = std::size_t(std::ceil(kPatternShare * double(wanted)));
        for (std::size_t centre : top) {
            std::vector<std::pair<double, std::size_t>> moves;
            for (std::size_t j : unproposed(grid().neighbours(centre)))
                moves.emplace_back(m_model.predict(features(j)).first, j);
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
    RandomForest m_model;
};

}  // namespace

std::unique_ptr<SearchStrategy> make_forest_strategy(const StrategyOptions& o) {
    return std::make_unique<ForestStrategy>(o);
}

}  // namespace ktune
