#pragma once
// The tuning history as transfer hints (tuner/strategy/transfer.hpp): what the database holds for other problems of
// the kernel on this device, read for `ktune tune`, and the check that a stored configuration is a candidate of the
// problem being searched.
#include <string>
#include <vector>

#include "core/types.hpp"
#include "results/store.hpp"
#include "tuner/space/search_space.hpp"
#include "tuner/strategy/transfer.hpp"

namespace ktune {

// The ok, timed results the store holds for the kernel's op and variant on the device, of any kernel source
// (history_winners prefers the kernel's own), each parsed as a configuration of `space`; rows whose configuration is
// not one (another source's parameters) are left out.
std::vector<StoredResult> stored_history(const Store& store, const SearchSpace& space, const KernelInfo& kernel,
                                         const std::string& device_key);

// Each alternative kernel's fastest ok, timed result per problem and run of the op and variant on the device, any
// kernel source: what triage (transfer.hpp triage_budget) weighs.
std::vector<KernelBest> stored_kernel_bests(const Store& store, const KernelInfo& kernel,
                                            const std::string& device_key);

// The problem's ok, timed results of the kernel (its source) on the device that are configurations of the space (the
// store keeps one row per configuration, a confirmation replacing the first measurement), fastest first (best_rank's
// order, then the earlier row, as Store::best): what a finished problem hands on to the searches of the run after it
// that learn across problems (learn_from), as history_results hands on the earlier runs' problems.
ProblemResults stored_results(const Store& store, const SearchSpace& space, const KernelInfo& kernel,
                              const std::string& device_key, const Problem& problem);

// The first kTransferDepth of `results` (stored_results'): what a finished problem hands on to the searches of the
// run after it as hints. `slowdown`, when given, receives each one's time over the fastest's.
std::vector<Config> fastest_of(const ProblemResults& results, std::vector<double>* slowdown = nullptr);

// fastest_of(stored_results(...)).
std::vector<Config> stored_fastest(const Store& store, const SearchSpace& space, const KernelInfo& kernel,
                                   const std::string& device_key, const Problem& problem,
                                   std::vector<double>* slowdown = nullptr);

// The store's rows of the kernel (its op, variant and source) at one problem on the device, of any status.
ResultFilter problem_results(const KernelInfo& kernel, const std::string& device_key, const Problem& problem);

// Whether the values match all the named values of any filter (`--config`); no filter: true.
bool matches_any(const NamedValues& values, const std::vector<NamedValues>& filters);

// Whether a configuration read from the database is a candidate of the problem: each value one its parameter
// declares, every constraint and prune rule holding at the problem, and within the --config filters (none: all).
bool is_selected_config(const SearchSpace& space, const Config& c, const Problem& p,
                        const std::vector<NamedValues>& config_filters);

}  // namespace ktune
