// Pattern search, best first: a batch is the configurations one step away along one parameter's axis of values
// from the fastest configuration seen so far, then, once those are all proposed, the rest of its axes (any value of
// one parameter, nearest first: the pattern widens, and crosses a band of configurations that fail), then the same
// around the next fastest, and so on. So the search climbs down from the best point and, once that point is a local
// optimum with every such neighbour measured, widens around the runners-up. One configuration of every batch of four or
// more is random, so a search stuck in one basin still samples the rest. The first batch is random.
#include <algorithm>

#include "tuner/strategy/adaptive.hpp"
#include "tuner/strategy/strategies.hpp"

namespace ktune {
namespace {

class PatternStrategy final : public AdaptiveStrategy {
public:
    using AdaptiveStrategy::AdaptiveStrategy;
    std::string_view name() const override { return "pattern"; }

private:
    std::vector<std::size_t> choose(std::size_t n) override {
        const std::size_t wanted = n >= 4 ? n - 1 : n;
        std::vector<std::size_t> out;
        for (std::size_t i : ranked()) {
            std::vector<std::size_t> next = unproposed(grid().neighbours(i));
            if (next.empty()) next = unproposed(grid().axis_neighbours(i));
            for (std::size_t j : next) {
                if (out.size() == wanted) return out;
                if (std::ranges::find(out, j) == out.end()) out.push_back(j);
            }
        }
        return out;
    }
};

}  // namespace

std::unique_ptr<SearchStrategy> make_pattern_strategy(const StrategyOptions& o) {
    return std::make_unique<PatternStrategy>(o);
}

}  // namespace ktune
