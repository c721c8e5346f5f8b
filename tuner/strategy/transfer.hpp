#pragma once
// Transfer between the problems of one space: the fastest configuration of a problem is usually fast, often the
// fastest, at a problem of similar shape. A search starts from those winners, the most similar problem's first, before
// its own proposals: the winners of this run's problems finished before it, and those the database holds for other
// problems from earlier runs (the tuning history). docs/search.md has what that does on ktune's own spaces, replayed.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/types.hpp"
#include "tuner/strategy/strategy.hpp"

namespace ktune {

// How many of its fastest configurations a tuned problem hands on: its winner, then runners-up, which come after the
// winners of all the similar problems (where few winners are valid at a problem, the next fastest of the nearest ones
// are better guesses than none).
inline constexpr std::size_t kTransferDepth = 3;

// A runner-up within this of its problem's winner tied it: a measurement stops once the 95 % confidence interval of its
// median is within 1 % of it (docs/measuring.md), so which of the two won is noise, and the other problems decide which
// is handed on first.
inline constexpr double kTransferTie = 0.01;

struct TunedProblem {
    Problem problem;
    std::vector<Config> fastest;  // its fastest configurations, fastest first, at most kTransferDepth
    bool stored = false;          // from the tuning history (an earlier run), not from this run
    // Each of `fastest`'s time over the first's (1 for the winner), where known: how close the runners-up came, which
    // orders the hints (transfer_hints). Empty: unknown, and the problem is left out of that estimate.
    std::vector<double> slowdown = {};
};

// An ok result of the tuning history, as history_winners() weighs it.
struct StoredResult {
    Problem problem;
    Config config;
    std::tuple<double, bool, double> rank;  // best_rank() of its measurement (core/measurement.hpp): smaller is faster
    std::int64_t run_id = 0;
    bool current_source = true;  // measured with the kernel source being tuned
};

// The tuning history's fastest configurations (kTransferDepth) of each problem but `problem` and those of `exclude`
// (this run's own problems, which hand on theirs as they finish), counting only results of runs before `before_run`:
// a resumed run passes the run of the problem's own first result, so it starts from the hints the first run had and
// measures nothing again. Of the current kernel source, or of any source where a problem has no result of this one
// (a kernel edit keeps its history as hints). Marked stored, ordered by problem key.
std::vector<TunedProblem> history_winners(const std::vector<StoredResult>& stored, const Problem& problem,
                                          const std::vector<Problem>& exclude, std::int64_t before_run);

// The tuning history's ok results of the same problems as history_winners (each configuration once, its fastest
// first where another source measured it again): what a strategy that learns across problems (learn_from) is given.
std::vector<ProblemResults> history_results(const std::vector<StoredResult>& stored, const Problem& problem,
                                            const std::vector<Problem>& exclude, std::int64_t before_run);

// A weight per shape axis, for problem_distance (axis_weights).
using AxisWeights = std::map<std::string, double>;

// How alike two problems are, smaller is closer: a dtype of another width is farther than any shape, one of the same
// width (fp16, bf16) counts 1; then the sum over the axes of |log2 a - log2 b| (an axis only one of them has counts as
// 1 against it), each times the axis's weight where `weights` has one.
double problem_distance(const Problem& a, const Problem& b, const AxisWeights& weights = {});

// How much each shape axis decides which configuration wins, learned from `tuned`: over the pairs of problems that
// differ along that axis alone, the mean log slowdown per doubling of one's winner at the other (as expected_slowdown
// counts it), over the mean of all axes, at least kMinAxisWeight. An axis along which the winners change then counts
// more than one along which they hardly do (the GEMM's N against its K), so the problems that share the deciding axes
// come first. Empty where no such pair says anything (every axis then weighs 1). `leave_out`, where given, is a problem
// of `tuned` to learn nothing from (the one the hints are for).
inline constexpr double kMinAxisWeight = 0.1;  // an axis along which the winners never changed still orders ties
AxisWeights axis_weights(const std::vector<TunedProblem>& tuned, const Problem* leave_out = nullptr);

// The fastest configurations of `tuned` (other problems of the same space): every problem's winner, the most similar
// problem's first (problem_distance weighted by the axis_weights of `tuned`), then every problem's second fastest in
// the same order, and so on; each once, only those `is_candidate` keeps (valid at `problem`), at most `limit`. Where a
// problem's runners-up tied its winner (kTransferTie), the one with the smallest expected_slowdown at `problem` counts
// as its winner, the others follow in that order. The problem itself is skipped if it is in `tuned`, for the weights
// too.
// `from_history`, when given, receives how many of the hints came from stored problems.
std::vector<Config> transfer_hints(const Problem& problem, const std::vector<TunedProblem>& tuned,
                                   const std::function<bool(const Config&)>& is_candidate, std::size_t limit,
                                   std::size_t* from_history = nullptr);

// The slowdown `config` is expected to have at `problem`: the mean over the problems of `tuned` that say how close
// their runners-up came of its slowdown there, each weighted 4^-problem_distance with `weights` (a problem one axis
// doubled away counts a quarter); where it is not among a problem's fastest, that problem's slowest handed on (it was
// at least that slow). Infinity where no problem weighs.
double expected_slowdown(const Problem& problem, const std::vector<TunedProblem>& tuned, const Config& config,
                         const AxisWeights& weights = {});

// Triage of a space of alternative kernels: a kernel the tuning history expects this much slower than the fastest
// kernel at a problem (from the problems near it) gets kTriageProbe evaluations there, its nearest winners, in case the
// regime changes here; the others share what it frees. On the GEMM space (four kernels, docs/search.md) no kernel
// comes within 10 % of the fastest at the problems where another wins by more than that: a slower kernel's budget
// buys nothing there.
inline constexpr double kTriageSlowdown = 1.10;
inline constexpr std::int64_t kTriageProbe = 2;

// One kernel's fastest time at one problem, as the tuning history holds it (run_id: of the run that measured it).
struct KernelBest {
    std::string kernel;
    Problem problem;
    double best = 0;
    std::int64_t run_id = 0;
};

// A kernel of a space of alternatives at one problem, for triage_budget: its configurations there and the budget its
// search would have on its own. A kernel tuned exhaustively there has none and is left out of the triage.
struct TriagedKernel {
    std::string name;
    std::int64_t configurations = 0;
    std::optional<std::int64_t> budget;
};

// What triage gives `kernel` at `problem` among `kernels`, from the stored results of runs before `before_run`, and
// before the first run that measured anything at the problem (a resumed run triages as its first did): its budget, and
// the slowdown expected of it. Its own budget (at most its configurations) where nothing is triaged.
struct Triage {
    std::int64_t budget = 0;
    double expected_slowdown = 1;
};
Triage triage_budget(const Problem& problem, const std::vector<TriagedKernel>& kernels, std::size_t kernel,
                     const std::vector<KernelBest>& stored, std::int64_t before_run);

// How much slower each of `kernels` is expected to be at `problem` than the fastest of them: its best over the best
// of all at each other problem where it and another kernel were measured, weighted 4^-problem_distance (as
// expected_slowdown). 1 for a kernel no such problem says anything about.
std::vector<double> expected_kernel_slowdowns(const Problem& problem, const std::vector<std::string>& kernels,
                                              const std::vector<KernelBest>& history);

// The kernels' budgets at a problem after triage: each kernel expected kTriageSlowdown or more slower keeps at most
// kTriageProbe; what they free goes to the others in proportion to their budgets, each at most its `sizes`
// (configurations). Unchanged where no kernel is triaged or every kernel would be.
std::vector<std::int64_t> triage_budgets(const std::vector<std::int64_t>& budgets,
                                         const std::vector<std::int64_t>& sizes, const std::vector<double>& expected);

// How many hints a search of `candidates` configurations starts with: 10 % of the space, at least 2 and at most 16.
// The winners of the nearest problems come first, so the first few carry nearly all of the gain. With a `budget`
// (configurations the search measures), at most half of it, so the strategy has its own moves left.
std::size_t transfer_hint_limit(std::size_t candidates, std::optional<std::int64_t> budget = std::nullopt);

}  // namespace ktune
