#pragma once
// Replay: a search strategy run against stored results instead of a GPU. Every configuration of a brute-forced space
// is known (ktune's own database after an exhaustive tuning, or a Kernel Tuner T4 file), so evaluating one is a lookup
// that costs what the stored evaluation cost (compile and measurement time, as recorded), and the strategy's own time
// is added as it is spent. docs/search.md shows the use.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.hpp"
#include "results/store.hpp"
#include "tuner/interop/t4.hpp"
#include "tuner/strategy/strategy.hpp"

namespace ktune {

struct ReplayEntry {
    Config config;
    Status status = Status::ok;
    double value = 0;   // the objective (time), lower is better, in ReplaySpace::unit; meaningful when ok
    double cost_s = 0;  // what evaluating it cost: compile, validation and measurement
};

// One kernel of a space of alternative kernels (docs/design.md): ReplaySpace::entries[begin, begin + size).
struct ReplayKernel {
    std::string name;  // the alternative's name
    std::size_t begin = 0, size = 0;
};

struct ReplaySpace {
    std::string name;
    std::string unit = "ms";
    std::vector<ReplayEntry> entries;
    std::optional<Problem> problem;  // a problem of a stored tuning; none for a T4 file
    // A space of alternative kernels: their entries one kernel after another. Each is searched on its own, as `ktune
    // tune` searches it (its own budget, its own chain of hints), and the problem's result is the best of them all.
    // Empty: one kernel, searched whole.
    std::vector<ReplayKernel> kernels = {};
};

ReplaySpace replay_space_from_t4(const T4File& f, std::string name);
// One space per problem of an op's stored results on a device: the variant of the kernel source that has the most
// results there and, of each of its alternative kernels, the source that has the most (as Store::best ranks one
// source of every alternative together). Each costs its recorded compile time plus its timing samples; `problem_key`
// keeps only that problem. Several devices are read as one (the same GPU model on several hosts, whose calibrations
// the store keeps apart: a tuning sharded over them), each problem from the device holding the most of its results.
std::vector<ReplaySpace> replay_spaces_from_store(const Store& store, const std::string& op,
                                                  const std::vector<std::string>& device_keys,
                                                  const std::optional<std::string>& problem_key = std::nullopt);

struct Evaluation {
    std::size_t entry = 0;
    double value = 0;   // NaN when the configuration failed
    double time_s = 0;  // since the start: the evaluations' costs so far, plus the strategy's own time
};

struct ReplayRun {
    std::string strategy;
    std::uint64_t seed = 0;
    std::vector<Evaluation> evaluations;
};

struct ReplayOptions {
    std::optional<std::int64_t> budget = std::nullopt;
    std::optional<int> batch = std::nullopt;
    bool count_strategy_time = true;  // off: runs are exactly repeatable in time too (tests)
};

// Kernel k of a space of alternatives as a space of its own: its entries, the problem, "<name> [<kernel>]".
ReplaySpace kernel_space(const ReplaySpace& space, std::size_t k);

// The runs of a problem's alternative kernels (runs[k] over kernel_space(space, k)) as one run over the space: their
// evaluations interleaved as each covers its own space, the j-th (from 0) of a kernel of N configurations at j / N, so
// that after any share s of the whole space each kernel has evaluated ceil(s N) of its own, as a tuning that gives
// each kernel that share of its space, and at least one configuration, would. So every kernel's first proposal (its
// nearest winner, with transfer) comes before any kernel's second; `expected[k]`, where given, orders a tie: the
// kernel the history expects fastest (triage's expected slowdown, transfer.hpp) first, then the kernels' order. Each
// evaluation costs what it cost in its own run (the strategy's own time included). `pace[k]`, where given, scales
// kernel k's share: a kernel whose budget triage multiplied by f evaluates f times that share.
ReplayRun merge_kernel_runs(const ReplaySpace& space, const std::vector<ReplayRun>& runs,
                            const std::vector<double>& pace = {}, const std::vector<double>& expected = {});

// Throws Error(internal) if the strategy proposes a configuration outside the space or one it proposed before.
// `first` goes to the strategy's start_with() (transfer from other problems' winners), `others` to its learn_from()
// (the other problems' results, where not empty).
ReplayRun replay(const ReplaySpace& space, std::string_view strategy, std::uint64_t seed, const ReplayOptions& o,
                 const std::vector<Config>& first = {}, const std::vector<ProblemResults>& others = {});

// A run recorded elsewhere (another tuner on the same space, e.g. Kernel Tuner's strategies in its simulation mode:
// bench/search/kt_replay.py): the configurations it evaluated, in order, and the strategy's own time before each.
struct TracedRun {
    std::uint64_t seed = 0;
    std::vector<Config> configs;
    std::vector<double> own_time_s;  // per configuration; empty: none recorded
};

// The trace charged as replay() charges a strategy: each configuration's recorded cost, plus the own time where
// count_strategy_time. Throws Error(bad_input) for a configuration outside the space or evaluated twice.
ReplayRun replay_trace(const ReplaySpace& space, std::string strategy, const TracedRun& trace,
                       bool count_strategy_time = true);

}  // namespace ktune
