#pragma once
// The adaptive strategies, each in its own file; make_strategy (strategy.cpp) builds them by name.
#include <memory>

#include "tuner/strategy/strategy.hpp"

namespace ktune {

std::unique_ptr<SearchStrategy> make_annealing_strategy(const StrategyOptions& o);
std::unique_ptr<SearchStrategy> make_genetic_strategy(const StrategyOptions& o);
std::unique_ptr<SearchStrategy> make_pattern_strategy(const StrategyOptions& o);
std::unique_ptr<SearchStrategy> make_forest_strategy(const StrategyOptions& o);

}  // namespace ktune
