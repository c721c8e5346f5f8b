#pragma once
// Search strategies: which configurations of a problem to measure, in which order. The session asks for batches so
// that it can compile a batch in parallel while measuring it, and reports every result back, so adaptive strategies
// fit the same interface. docs/search.md compares them.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/measurement.hpp"
#include "core/types.hpp"

namespace ktune {

struct StrategyOptions {
    std::optional<std::int64_t> budget;  // at most this many configurations per problem
    std::uint64_t seed = 1;
    std::optional<int> batch = std::nullopt;  // adaptive strategies: configurations per proposal (default 8)
};

// Another problem's results with the same kernel (the tuning history, or a problem the run finished before this one),
// for a strategy that learns across problems: the rank time of each configuration that ran.
struct ProblemResults {
    Problem problem;
    std::vector<std::pair<Config, double>> times;
};

// Inserts `r` into `to`, kept in problem-key order (as the tuning history's): the order in which `ktune tune` and
// replay alike hand a run's finished problems to learn_from.
void insert_in_key_order(std::vector<ProblemResults>& to, ProblemResults r);

class SearchStrategy {
public:
    virtual ~SearchStrategy() = default;
    virtual std::string_view name() const = 0;
    // Starts a problem: `candidates` are its valid configurations (the search space after constraints).
    virtual void begin(const Problem& problem, std::vector<Config> candidates) = 0;
    // Configurations to propose first, in this order, before the strategy's own ideas (the winners of similar
    // problems: transfer.hpp); called after begin() and before the first propose(). Those that are not candidates
    // are ignored; the others count against the budget. Exhaustive search measures everything and ignores them.
    virtual void start_with(const std::vector<Config>& first) { (void)first; }
    // Other problems' results of the same kernel (the tuning history and the run's problems finished before this one,
    // never this problem's own), for a strategy whose model learns from them before this problem has results
    // (forest); called after begin() and before the first propose(). The others ignore them. Returns what the model
    // learned from (nothing for those, or where too few results left it without a model), for the tuning's report.
    struct Learned {
        std::int64_t problems = 0, results = 0;
    };
    virtual Learned learn_from(const std::vector<ProblemResults>& others) {
        (void)others;
        return {};
    }
    // Whether learn_from uses what it is given: the others' results need not be gathered for it otherwise.
    virtual bool learns_from_others() const { return false; }
    // The next configurations to measure (empty when the strategy is done with this problem).
    virtual std::vector<Config> propose() = 0;
    // What one proposed configuration gave (skipped ones, already in the store, are reported too).
    virtual void observe(const Config& config, const Measurement& m) = 0;
};

// "exhaustive", "random", or an adaptive strategy: "annealing" (simulated annealing), "genetic" (a genetic
// algorithm), "pattern" (best-first pattern search over neighbouring values), "forest" (model-based: a random forest
// predicts where the fastest are). Throws Error(bad_input) naming the known strategies otherwise.
std::unique_ptr<SearchStrategy> make_strategy(std::string_view name, const StrategyOptions& options);
std::vector<std::string> strategy_names();

// What `ktune tune` runs on one problem. "auto" (its default) is exhaustive up to kLargeSpace valid configurations
// and, above, kLargeSpaceStrategy with a budget of kLargeSpaceBudgetFraction of the space (at least
// kLargeSpaceMinBudget, or --budget when given): the strategy and budget that did best when replayed over brute-forced
// spaces (docs/search.md). Any other name runs as asked. Throws Error(bad_input) for an unknown name.
inline constexpr std::size_t kLargeSpace = 2000;
inline constexpr std::string_view kLargeSpaceStrategy = "forest";
inline constexpr double kLargeSpaceBudgetFraction = 0.1;
inline constexpr std::int64_t kLargeSpaceMinBudget = 500;

struct StrategyPlan {
    std::string name;
    std::optional<std::int64_t> budget;
    bool automatic = false;  // "auto" chose a search instead of exhaustive
};
StrategyPlan plan_strategy(std::string_view requested, std::optional<std::int64_t> budget, std::size_t valid);

}  // namespace ktune
