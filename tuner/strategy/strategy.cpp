#include "tuner/strategy/strategy.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "core/error.hpp"
#include "tuner/strategy/strategies.hpp"

namespace ktune {
namespace {

// Every valid configuration, in declaration order, all at once (the compile pool gets the most parallel work).
class ExhaustiveStrategy final : public SearchStrategy {
public:
    explicit ExhaustiveStrategy(StrategyOptions o) : m_options(o) {}
    std::string_view name() const override { return "exhaustive"; }
    void begin(const Problem&, std::vector<Config> candidates) override {
        m_pending = std::move(candidates);
        if (m_options.budget && std::int64_t(m_pending.size()) > *m_options.budget)
            m_pending.resize(static_cast<std::size_t>(*m_options.budget));
    }
    std::vector<Config> propose() override { return std::exchange(m_pending, {}); }
    void observe(const Config&, const Measurement&) override {}

private:
    StrategyOptions m_options;
    std::vector<Config> m_pending;
};

// A uniform sample without replacement of `budget` configurations; the seed makes it repeatable, and the same seed
// proposes the same sample again, so a resumed random run measures what it skipped before, not a new sample.
class RandomStrategy final : public SearchStrategy {
public:
    explicit RandomStrategy(StrategyOptions o) : m_options(o) {}
    std::string_view name() const override { return "random"; }
    void begin(const Problem& problem, std::vector<Config> candidates) override {
        // Mix the problem into the seed so problems do not all get the same positions of their lists.
        std::seed_seq seq{m_options.seed, std::hash<std::string>{}(problem.key())};
        std::mt19937_64 rng(seq);
        std::shuffle(candidates.begin(), candidates.end(), rng);
        m_pending = std::move(candidates);
        m_started = false;
    }
    void start_with(const std::vector<Config>& first) override {
        // The hints move to the front in their order; the rest keep their random order.
        std::vector<Config> front, rest;
        for (const Config& h : first) {
            const auto it =
                std::find_if(m_pending.begin(), m_pending.end(), [&](const Config& c) { return c.key() == h.key(); });
            if (it == m_pending.end()) continue;
            front.push_back(std::move(*it));
            m_pending.erase(it);
        }
        front.insert(front.end(), std::make_move_iterator(m_pending.begin()), std::make_move_iterator(m_pending.end()));
        m_pending = std::move(front);
    }
    std::vector<Config> propose() override {
        if (m_started) return {};
        m_started = true;
        if (m_options.budget && std::int64_t(m_pending.size()) > *m_options.budget)
            m_pending.resize(static_cast<std::size_t>(*m_options.budget));
        return std::exchange(m_pending, {});
    }
    void observe(const Config&, const Measurement&) override {}

private:
    StrategyOptions m_options;
    std::vector<Config> m_pending;
    bool m_started = false;
};

}  // namespace

std::vector<std::string> strategy_names() {
    return {"exhaustive", "random", "annealing", "genetic", "pattern", "forest"};
}

StrategyPlan plan_strategy(std::string_view requested, std::optional<std::int64_t> budget, std::size_t valid) {
    if (requested != "auto") {
        make_strategy(requested, {budget, 1});  // the name and the budget are checked here
        return {std::string(requested), budget, false};
    }
    if (valid <= kLargeSpace) return {"exhaustive", budget, false};
    const auto share = std::int64_t(std::ceil(kLargeSpaceBudgetFraction * double(valid)));
    return {std::string(kLargeSpaceStrategy), budget.value_or(std::max(kLargeSpaceMinBudget, share)), true};
}

std::unique_ptr<SearchStrategy> make_strategy(std::string_view name, const StrategyOptions& options) {
    if (options.budget && *options.budget < 1)
        throw Error(ErrorCategory::bad_input, fmt::format("must be at least 1, got {}", *options.budget), "--budget");
    if (options.batch && *options.batch < 1)
        throw Error(ErrorCategory::bad_input, fmt::format("must be at least 1, got {}", *options.batch), "--batch");
    if (name == "exhaustive") return std::make_unique<ExhaustiveStrategy>(options);
    if (name == "random") return std::make_unique<RandomStrategy>(options);
    if (name == "annealing") return make_annealing_strategy(options);
    if (name == "genetic") return make_genetic_strategy(options);
    if (name == "pattern") return make_pattern_strategy(options);
    if (name == "forest") return make_forest_strategy(options);
    throw Error(ErrorCategory::bad_input,
                fmt::format("unknown strategy '{}' (known: {})", name, fmt::join(strategy_names(), ", ")),
                "--strategy");
}

void insert_in_key_order(std::vector<ProblemResults>& to, ProblemResults r) {
    const auto at =
        std::ranges::upper_bound(to, r.problem.key(), {}, [](const ProblemResults& p) { return p.problem.key(); });
    to.insert(at, std::move(r));
}

}  // namespace ktune
