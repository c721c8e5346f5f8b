#pragma once
// The common part of the strategies that learn from results (annealing, genetic, pattern, forest): the candidates as
// a grid (SpaceIndex), what was proposed (never proposed twice), what each result cost, the budget, the seeded
// generator, and full batches: when a strategy has fewer ideas than the batch holds, random candidates not yet
// proposed fill it, so compiling keeps pace with measuring and a strategy never stalls before the budget is spent.
//
// A result's cost is its rank time (Measurement::rank_us); a configuration that failed to compile, validate or run
// costs +infinity (infeasible: never a current state, a parent or a leader), and models see it as twice the slowest
// time seen. A result without a time (a skipped configuration the session could not look up) is unknown.
#include <cstddef>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "tuner/strategy/space_index.hpp"
#include "tuner/strategy/strategy.hpp"

namespace ktune {

inline constexpr double kInfeasible = std::numeric_limits<double>::infinity();

class AdaptiveStrategy : public SearchStrategy {
public:
    explicit AdaptiveStrategy(StrategyOptions o) : m_options(o) {}
    void begin(const Problem& problem, std::vector<Config> candidates) final;
    void start_with(const std::vector<Config>& first) final;
    std::vector<Config> propose() final;
    void observe(const Config& config, const Measurement& m) final;

protected:
    // Up to `n` candidates not yet proposed, best idea first (duplicates and proposed ones are dropped).
    virtual std::vector<std::size_t> choose(std::size_t n) = 0;
    virtual void start() {}

    const SpaceIndex& grid() const { return *m_index; }
    const Problem& problem() const { return m_problem; }
    const Config& candidate(std::size_t i) const { return m_candidates[i]; }
    std::mt19937_64& rng() { return m_rng; }
    std::size_t batch_size() const;
    bool proposed(std::size_t i) const { return m_proposed[i]; }
    std::optional<double> cost(std::size_t i) const { return m_cost[i]; }
    // Observed candidates, in the order their results came; the last batch's are the last ones.
    const std::vector<std::size_t>& observed() const { return m_observed; }
    std::size_t last_batch_begin() const { return m_last_batch_begin; }
    // The cheapest feasible observed candidate.
    std::optional<std::size_t> best() const;
    // Feasible observed candidates, cheapest first.
    std::vector<std::size_t> ranked() const;
    // The cost models learn for an infeasible candidate: twice the slowest feasible one (1 when none).
    double penalty() const;
    std::vector<std::size_t> random_unproposed(std::size_t n);
    std::vector<std::size_t> unproposed(const std::vector<std::size_t>& ids) const;
    // The fraction of the budget (or of the space, without one) already proposed.
    double progress() const;
    // Whether start_with() gave configurations that were proposed: results from a similar problem's winners.
    bool hinted() const { return m_hinted; }

private:
    StrategyOptions m_options;
    Problem m_problem;
    std::optional<SpaceIndex> m_index;
    std::vector<Config> m_candidates;
    std::vector<bool> m_proposed;
    std::vector<std::optional<double>> m_cost;
    std::vector<std::size_t> m_observed;
    std::vector<std::size_t> m_first;  // start_with()'s candidates, proposed before choose() is asked
    bool m_hinted = false;
    std::size_t m_last_batch_begin = 0;
    std::size_t m_proposed_count = 0;
    std::mt19937_64 m_rng;
};

}  // namespace ktune
