#include "tuner/session/history.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "core/error.hpp"

namespace ktune {

bool matches_any(const NamedValues& values, const std::vector<NamedValues>& filters) {
    const auto matches = [&](const NamedValues& filter) {
        return std::ranges::all_of(filter, [&](const auto& item) {
            const auto v = lookup(values, item.first);
            return v && *v == item.second;
        });
    };
    return filters.empty() || std::ranges::any_of(filters, matches);
}

ResultFilter problem_results(const KernelInfo& kernel, const std::string& device_key, const Problem& problem) {
    ResultFilter f;
    f.op = kernel.op;
    f.variant = kernel.variant;
    f.device_key = device_key;
    f.source_hash = kernel.source_hash;
    f.problem_key = problem.key();
    return f;
}

namespace {

// The ok results of the kernel's op and variant on the device, of every source and alternative.
ResultFilter ok_results_of_op(const KernelInfo& kernel, const std::string& device_key) {
    ResultFilter f;
    f.op = kernel.op;
    f.variant = kernel.variant;
    f.device_key = device_key;
    f.status = Status::ok;
    return f;
}

}  // namespace

std::vector<StoredResult> stored_history(const Store& store, const SearchSpace& space, const KernelInfo& kernel,
                                         const std::string& device_key) {
    const ResultFilter f = ok_results_of_op(kernel, device_key);
    std::vector<StoredResult> out;
    std::map<std::string, std::optional<Config>> parsed;  // by configuration key: each parsed once
    for (const ResultRecord& r : store.results(f)) {
        if (!(r.measurement.rank_us() > 0)) continue;
        auto [it, added] = parsed.try_emplace(r.config_key);
        if (added) {
            try {
                it->second = space.parse_config(r.config_key, store.path());
            } catch (const Error&) {  // another source's parameters
            }
        }
        if (!it->second) continue;
        out.push_back(
            {r.problem, *it->second, best_rank(r.measurement), r.run_id, r.kernel.source_hash == kernel.source_hash});
    }
    return out;
}

std::vector<KernelBest> stored_kernel_bests(const Store& store, const KernelInfo& kernel,
                                            const std::string& device_key) {
    const ResultFilter f = ok_results_of_op(kernel, device_key);
    std::map<std::tuple<std::string, std::string, std::int64_t>, KernelBest> best;  // alternative, problem, run
    for (const ResultRecord& r : store.results(f)) {
        const double t = r.measurement.rank_us();
        if (!(t > 0)) continue;
        auto [it, added] = best.try_emplace({r.kernel.alternative, r.problem.key(), r.run_id},
                                            KernelBest{r.kernel.alternative, r.problem, t, r.run_id});
        if (!added) it->second.best = std::min(it->second.best, t);
    }
    std::vector<KernelBest> out;
    for (auto& [key, b] : best) out.push_back(std::move(b));
    return out;
}

ProblemResults stored_results(const Store& store, const SearchSpace& space, const KernelInfo& kernel,
                              const std::string& device_key, const Problem& problem) {
    ResultFilter f = problem_results(kernel, device_key, problem);
    f.status = Status::ok;
    std::vector<ResultRecord> rows = store.results(f);  // in row order: a tie goes to the earlier row
    std::erase_if(rows, [](const ResultRecord& r) { return !(r.measurement.rank_us() > 0); });
    std::ranges::stable_sort(rows, {}, [](const ResultRecord& r) { return best_rank(r.measurement); });
    ProblemResults out{problem, {}};
    for (const ResultRecord& r : rows) {
        try {
            out.times.emplace_back(space.parse_config(r.config_key, store.path()), r.measurement.rank_us());
        } catch (const Error&) {  // not a configuration of this space: neither a hint nor learned from
        }
    }
    return out;
}

std::vector<Config> fastest_of(const ProblemResults& results, std::vector<double>* slowdown) {
    std::vector<Config> out;
    if (slowdown) slowdown->clear();
    for (const auto& [config, time] : results.times) {
        if (out.size() == kTransferDepth) break;
        out.push_back(config);
        if (slowdown) slowdown->push_back(time / results.times.front().second);
    }
    return out;
}

std::vector<Config> stored_fastest(const Store& store, const SearchSpace& space, const KernelInfo& kernel,
                                   const std::string& device_key, const Problem& problem,
                                   std::vector<double>* slowdown) {
    return fastest_of(stored_results(store, space, kernel, device_key, problem), slowdown);
}

bool is_selected_config(const SearchSpace& space, const Config& c, const Problem& p,
                        const std::vector<NamedValues>& config_filters) {
    // parse_config does not check that an integer is among its parameter's values.
    for (const ParameterSpec& param : space.parameters()) {
        const auto v = lookup(c.values, param.name);
        if (!v || std::ranges::find(param.values, *v) == param.values.end()) return false;
    }
    return space.is_valid(c, p) && matches_any(c.values, config_filters);
}

}  // namespace ktune
