// Simulated annealing on the grid of values: a batch is neighbours of the current configuration (one parameter one
// step away, in random order, then further along one parameter's axis, nearest first); each result, in turn, becomes
// the current one when faster, or when slower with probability exp(-(t - t_cur) / (T s)), where s is the spread of
// the times seen (their median minus the best) and the temperature T falls from 1 (a step as much slower as that
// spread is accepted with probability 1/e) to 0.01 as the budget is spent. A temperature relative to the current time
// instead left the walk at random search's level on the dedispersion spaces of docs/search.md, whose times all lie
// within a few per cent of each other. An infeasible result is never accepted. When the current configuration has no
// neighbour left, the walk starts again from the fastest configuration seen that has some (a random batch when none
// has).
#include <algorithm>
#include <cmath>

#include "tuner/strategy/adaptive.hpp"
#include "tuner/strategy/strategies.hpp"

namespace ktune {
namespace {

class AnnealingStrategy final : public AdaptiveStrategy {
public:
    using AdaptiveStrategy::AdaptiveStrategy;
    std::string_view name() const override { return "annealing"; }

private:
    static constexpr double kStartTemperature = 1, kEndTemperature = 0.01;

    // The median of the feasible times seen minus the best of them.
    double spread() const {
        std::vector<double> times;
        for (std::size_t i : observed())
            if (*cost(i) < kInfeasible) times.push_back(*cost(i));
        if (times.size() < 2) return 0;
        const auto mid = times.begin() + std::ptrdiff_t(times.size() / 2);
        std::nth_element(times.begin(), mid, times.end());
        return *mid - *std::ranges::min_element(times);
    }

    void start() override {
        m_current.reset();
        m_seen = 0;
    }

    std::vector<std::size_t> choose(std::size_t n) override {
        const double temperature = kStartTemperature * std::pow(kEndTemperature / kStartTemperature, progress());
        const double scale = std::max(spread(), 1e-9);
        std::uniform_real_distribution<double> uniform(0, 1);
        for (; m_seen < observed().size(); ++m_seen) {
            const std::size_t i = observed()[m_seen];
            const double c = *cost(i);
            if (c == kInfeasible) continue;
            if (!m_current || c <= m_current_cost ||
                uniform(rng()) < std::exp(-(c - m_current_cost) / (scale * temperature))) {
                m_current = i;
                m_current_cost = c;
            }
        }
        if (!m_current) return {};
        std::vector<std::size_t> next = around(*m_current);
        for (std::size_t restart : ranked()) {
            if (!next.empty()) break;
            next = around(restart);
            m_current = restart;
            m_current_cost = *cost(restart);
        }
        if (next.empty()) {
            m_current.reset();
            return {};
        }
        if (next.size() > n) next.resize(n);
        return next;
    }

    // The unproposed neighbours of i one step away, in random order, then the rest of its axes, nearest first.
    std::vector<std::size_t> around(std::size_t i) {
        std::vector<std::size_t> next = unproposed(grid().neighbours(i));
        std::shuffle(next.begin(), next.end(), rng());
        for (std::size_t j : unproposed(grid().axis_neighbours(i)))
            if (std::ranges::find(next, j) == next.end()) next.push_back(j);
        return next;
    }

    std::optional<std::size_t> m_current;
    double m_current_cost = 0;
    std::size_t m_seen = 0;
};

}  // namespace

std::unique_ptr<SearchStrategy> make_annealing_strategy(const StrategyOptions& o) {
    return std::make_unique<AnnealingStrategy>(o);
}

}  // namespace ktune
