// A steady-state genetic algorithm: the population is the fastest feasible configurations seen so far (at least 20,
// two batches); a batch is children of parents chosen by 3-way tournaments, by uniform crossover of their positions on
// each parameter's axis of values, then mutation (each parameter with probability 1/dims, at least one when the child
// equals a parent: one step along the axis, or a random value one time in four). A child that is not a valid
// configuration, or was proposed before, is bred again (up to 30 tries per child). Until four results are in, the
// batch is random.
#include <algorithm>

#include "tuner/strategy/adaptive.hpp"
#include "tuner/strategy/strategies.hpp"

namespace ktune {
namespace {

class GeneticStrategy final : public AdaptiveStrategy {
public:
    using AdaptiveStrategy::AdaptiveStrategy;
    std::string_view name() const override { return "genetic"; }

private:
    std::vector<std::size_t> choose(std::size_t n) override {
        std::vector<std::size_t> population = ranked();
        if (population.size() < 4) return {};
        population.resize(std::min(population.size(), std::max<std::size_t>(20, 2 * batch_size())));
        std::uniform_int_distribution<std::size_t> member(0, population.size() - 1);
        auto tournament = [&] {
            std::size_t winner = member(rng());
            for (int k = 1; k < 3; ++k) winner = std::min(winner, member(rng()));  // population is fastest first
            return population[winner];
        };
        const std::size_t dims = grid().dims();
        std::uniform_real_distribution<double> uniform(0, 1);
        std::uniform_int_distribution<std::size_t> any_dim(0, dims - 1);
        auto mutate = [&](GridPoint& p, std::size_t d) {
            const int levels = grid().levels(d);
            if (levels < 2) return;
            if (uniform(rng()) < 0.25) {
                p[d] = std::uniform_int_distribution<int>(0, levels - 1)(rng());
            } else {
                const int step = uniform(rng()) < 0.5 ? -1 : 1;
                p[d] = std::clamp(p[d] + step, 0, levels - 1);
            }
        };
        std::vector<std::size_t> out;
        for (std::size_t tries = 0; out.size() < n && tries < 30 * n; ++tries) {
            const GridPoint& a = grid().point(tournament());
            const GridPoint& b = grid().point(tournament());
            GridPoint child(dims);
            for (std::size_t d = 0; d < dims; ++d) child[d] = uniform(rng()) < 0.5 ? a[d] : b[d];
            bool mutated = false;
            for (std::size_t d = 0; d < dims; ++d)
                if (uniform(rng()) < 1.0 / double(dims)) {
                    mutate(child, d);
                    mutated = true;
                }
            if (!mutated && (child == a || child == b)) mutate(child, any_dim(rng()));
            const auto i = grid().find(child);
            if (i && !proposed(*i) && std::ranges::find(out, *i) == out.end()) out.push_back(*i);
        }
        return out;
    }
};

}  // namespace

std::unique_ptr<SearchStrategy> make_genetic_strategy(const StrategyOptions& o) {
    return std::make_unique<GeneticStrategy>(o);
}

}  // namespace ktune
