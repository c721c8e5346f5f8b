#include "tuner/replay/replay.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <unordered_map>

#include <fmt/format.h>

#include "core/error.hpp"
#include "tuner/strategy/strategy.hpp"

namespace ktune {

ReplaySpace replay_space_from_t4(const T4File& f, std::string name) {
    ReplaySpace s;
    s.name = std::move(name);
    s.unit = "ms";
    for (const T4Result& r : f.results) {
        if (r.invalidity == "constraints") continue;  // never a candidate: the space's restrictions exclude it
        ReplayEntry e;
        e.config.values = r.config;
        e.status = r.valid()                       ? Status::ok
                   : r.invalidity == "compile"     ? Status::compile_error
                   : r.invalidity == "correctness" ? Status::invalid_result
                                                   : Status::launch_error;
        if (r.valid()) e.value = *r.time_ms;
        e.cost_s = r.total_ms() / 1000;
        s.entries.push_back(std::move(e));
    }
    return s;
}

namespace {

ReplayEntry entry_of(const ResultRecord& r) {
    ReplayEntry e;
    std::size_t start = 0;
    while (start < r.config_key.size()) {
        const std::size_t comma = std::min(r.config_key.find(',', start), r.config_key.size());
        const std::string item = r.config_key.substr(start, comma - start);
        const std::size_t eq = item.find('=');
        if (eq != std::string::npos) e.config.values.emplace_back(item.substr(0, eq), std::stoll(item.substr(eq + 1)));
        start = comma + 1;
    }
    const Measurement& m = r.measurement;
    e.status = m.status == Status::ok && m.rank_us() > 0 ? Status::ok
               : m.status == Status::ok                  ? Status::launch_error
                                                         : m.status;
    e.value = m.rank_us();
    const double sampled_us = std::accumulate(m.samples_us.begin(), m.samples_us.end(), 0.0) +
                              std::accumulate(m.cupti_samples_us.begin(), m.cupti_samples_us.end(), 0.0);
    e.cost_s = m.compile.compile_seconds + sampled_us * 1e-6;
    return e;
}

std::string source_key(const ResultRecord& r) { return r.kernel.variant + "|" + r.kernel.source_hash; }

// What a replay reads of an op's results: the variant with the most results and, of each of its alternative kernels,
// the source with the most (as Store::best ranks one source of every alternative together).
struct ReplayedSources {
    std::string variant;
    std::map<std::string, std::string> source_of;  // alternative -> its source

    bool holds(const ResultRecord& r) const {
        const auto it = source_of.find(r.kernel.alternative);
        return r.kernel.variant == variant && it != source_of.end() && it->second == source_key(r);
    }
};

ReplayedSources replayed_sources(const std::vector<std::vector<ResultRecord>>& per_device) {
    std::map<std::string, std::size_t> per_source;
    std::map<std::string, const KernelInfo*> kernel_of;
    for (const std::vector<ResultRecord>& records : per_device) {
        for (const ResultRecord& r : records) {
            ++per_source[source_key(r)];
            kernel_of.emplace(source_key(r), &r.kernel);
        }
    }
    if (per_source.empty()) return {};
    const std::string top = std::ranges::max_element(per_source, {}, [](const auto& e) { return e.second; })->first;
    ReplayedSources out{kernel_of.at(top)->variant, {}};
    for (const auto& [key, n] : per_source) {
        if (kernel_of.at(key)->variant != out.variant) continue;
        const auto [it, added] = out.source_of.try_emplace(kernel_of.at(key)->alternative, key);
        if (!added && it->second != top && (key == top || n > per_source[it->second])) it->second = key;
    }
    return out;
}

// Each problem's results from one device. With several (one GPU model on several hosts, whose calibrations the store
// keeps apart), the one holding the most of the problem's replayed results (ties: the first named), in that device's
// store order; the problems in the order they were first measured.
std::vector<ResultRecord> one_device_per_problem(std::vector<std::vector<ResultRecord>> per_device,
                                                 const ReplayedSources& sources) {
    if (per_device.size() == 1) return std::move(per_device.front());
    std::map<std::string, std::vector<std::size_t>> count;  // per problem, its replayed results on each device
    for (std::size_t d = 0; d < per_device.size(); ++d) {
        for (const ResultRecord& r : per_device[d]) {
            std::vector<std::size_t>& c = count[r.problem.key()];
            c.resize(per_device.size());
            if (sources.holds(r)) ++c[d];
        }
    }
    std::map<std::string, std::vector<ResultRecord>> of_problem;
    std::vector<std::pair<std::string, std::string>> first_measured;  // (when, problem)
    for (std::size_t d = 0; d < per_device.size(); ++d) {
        for (ResultRecord& r : per_device[d]) {
            const std::vector<std::size_t>& c = count.at(r.problem.key());
            if (std::size_t(std::ranges::max_element(c) - c.begin()) != d) continue;
            std::vector<ResultRecord>& rs = of_problem[r.problem.key()];
            if (rs.empty()) first_measured.emplace_back(r.measured_at, r.problem.key());
            rs.push_back(std::move(r));
        }
    }
    std::ranges::stable_sort(first_measured, {}, &std::pair<std::string, std::string>::first);
    std::vector<ResultRecord> out;
    for (const auto& [when, problem] : first_measured)
        std::ranges::move(of_problem.at(problem), std::back_inserter(out));
    return out;
}

}  // namespace

std::vector<ReplaySpace> replay_spaces_from_store(const Store& store, const std::string& op,
                                                  const std::vector<std::string>& device_keys,
                                                  const std::optional<std::string>& problem_key) {
    std::vector<std::vector<ResultRecord>> per_device;
    for (const std::string& key : device_keys) {
        ResultFilter f;
        f.op = op;
        f.device_key = key;
        f.problem_key = problem_key;
        per_device.push_back(store.results(f));
    }
    const ReplayedSources sources = replayed_sources(per_device);
    if (sources.variant.empty()) return {};
    const std::vector<ResultRecord> records = one_device_per_problem(std::move(per_device), sources);
    // The kernels in the order they were first measured (a space file's order, which `ktune tune` follows), and the
    // problems likewise: a tuning's order, which transfer between problems follows.
    std::vector<std::string> kernels;
    std::vector<ReplaySpace> out;
    std::map<std::string, std::size_t> index_of;
    std::vector<std::vector<std::vector<ReplayEntry>>> entries;  // per problem, per kernel
    for (const ResultRecord& r : records) {
        if (!sources.holds(r)) continue;
        const auto k = std::size_t(std::ranges::find(kernels, r.kernel.alternative) - kernels.begin());
        if (k == kernels.size()) kernels.push_back(r.kernel.alternative);
        const auto [it, added] = index_of.emplace(r.problem.key(), out.size());
        if (added) {
            out.emplace_back();
            entries.emplace_back();
        }
        ReplaySpace& s = out[it->second];
        s.name = fmt::format("{} {} on {}", op, r.problem.key(), r.device_key);
        s.unit = "us";
        s.problem = r.problem;
        entries[it->second].resize(std::max(entries[it->second].size(), k + 1));
        entries[it->second][k].push_back(entry_of(r));
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
        for (std::size_t k = 0; k < entries[i].size(); ++k) {
            if (kernels.size() > 1 && !entries[i][k].empty())
                out[i].kernels.push_back({kernels[k], out[i].entries.size(), entries[i][k].size()});
            for (ReplayEntry& e : entries[i][k]) out[i].entries.push_back(std::move(e));
        }
    }
    return out;
}

ReplaySpace kernel_space(const ReplaySpace& space, std::size_t k) {
    const ReplayKernel& kernel = space.kernels.at(k);
    ReplaySpace out;
    out.name = fmt::format("{} [{}]", space.name, kernel.name);
    out.unit = space.unit;
    out.problem = space.problem;
    const auto first = space.entries.begin() + std::ptrdiff_t(kernel.begin);
    out.entries.assign(first, first + std::ptrdiff_t(kernel.size));
    return out;
}

ReplayRun merge_kernel_runs(const ReplaySpace& space, const std::vector<ReplayRun>& runs,
                            const std::vector<double>& pace, const std::vector<double>& expected) {
    if (runs.size() != space.kernels.size() || (!pace.empty() && pace.size() != runs.size()) ||
        (!expected.empty() && expected.size() != runs.size()))
        throw Error(ErrorCategory::internal,
                    fmt::format("{} runs for the {} kernels of {}", runs.size(), space.kernels.size(), space.name));
    ReplayRun out;
    if (!runs.empty()) {
        out.strategy = runs.front().strategy;
        out.seed = runs.front().seed;
    }
    std::vector<std::size_t> next(runs.size(), 0);
    double elapsed = 0;
    for (;;) {
        // The kernel whose next evaluation starts at the smallest share of its own space: j / N for its j-th (from
        // 0), compared exactly (with a pace, j / (pace N)); a tie to the kernel expected faster, then the earlier.
        std::optional<std::size_t> pick;
        const auto before = [&](std::size_t a, std::size_t b) {
            const double pa = pace.empty() ? 1.0 : pace[a], pb = pace.empty() ? 1.0 : pace[b];
            const double lhs = double(next[a]) * pb * double(space.kernels[b].size);
            const double rhs = double(next[b]) * pa * double(space.kernels[a].size);
            if (lhs != rhs) return lhs < rhs;
            return !expected.empty() && expected[a] < expected[b];
        };
        for (std::size_t k = 0; k < runs.size(); ++k) {
            if (next[k] == runs[k].evaluations.size()) continue;
            if (!pick || before(k, *pick)) pick = k;
        }
        if (!pick) break;
        const std::size_t k = *pick;
        const Evaluation& e = runs[k].evaluations[next[k]];
        elapsed += e.time_s - (next[k] ? runs[k].evaluations[next[k] - 1].time_s : 0.0);
        out.evaluations.push_back({space.kernels[k].begin + e.entry, e.value, elapsed});
        ++next[k];
    }
    return out;
}

ReplayRun replay(const ReplaySpace& space, std::string_view strategy, std::uint64_t seed, const ReplayOptions& o,
                 const std::vector<Config>& first, const std::vector<ProblemResults>& others) {
    using Clock = std::chrono::steady_clock;
    ReplayRun run;
    run.strategy = std::string(strategy);
    run.seed = seed;
    std::vector<Config> candidates;
    std::unordered_map<std::string, std::size_t> by_key;
    for (std::size_t i = 0; i < space.entries.size(); ++i) {
        candidates.push_back(space.entries[i].config);
        by_key.emplace(space.entries[i].config.key(), i);
    }
    std::vector<bool> done(space.entries.size(), false);
    auto s = make_strategy(strategy, {o.budget, seed, o.batch});
    double elapsed = 0;
    auto timed = [&](auto&& f) {
        const auto t0 = Clock::now();
        f();
        if (o.count_strategy_time) elapsed += std::chrono::duration<double>(Clock::now() - t0).count();
    };
    timed([&] {
        s->begin(space.problem.value_or(Problem{Dtype::fp32, {}}), candidates);
        if (!first.empty()) s->start_with(first);
        if (!others.empty()) s->learn_from(others);
    });
    std::vector<Config> batch;
    timed([&] { batch = s->propose(); });
    while (!batch.empty()) {
        for (const Config& c : batch) {
            const auto it = by_key.find(c.key());
            if (it == by_key.end())
                throw Error(ErrorCategory::internal,
                            fmt::format("strategy {} proposed {}, not in {}", strategy, c.key(), space.name));
            if (done[it->second])
                throw Error(ErrorCategory::internal, fmt::format("strategy {} proposed {} twice", strategy, c.key()));
            done[it->second] = true;
            const ReplayEntry& e = space.entries[it->second];
            Measurement m;
            m.status = e.status;
            if (e.status == Status::ok) m.stats.p50 = e.value;
            elapsed += e.cost_s;
            run.evaluations.push_back(
                {it->second, e.status == Status::ok ? e.value : std::numeric_limits<double>::quiet_NaN(), elapsed});
            timed([&] { s->observe(c, m); });
        }
        timed([&] { batch = s->propose(); });
    }
    return run;
}

ReplayRun replay_trace(const ReplaySpace& space, std::string strategy, const TracedRun& trace,
                       bool count_strategy_time) {
    if (!trace.own_time_s.empty() && trace.own_time_s.size() != trace.configs.size())
        throw Error(ErrorCategory::bad_input, fmt::format("a run of {} has {} configurations and {} own times",
                                                          strategy, trace.configs.size(), trace.own_time_s.size()));
    std::unordered_map<std::string, std::size_t> by_key;
    for (std::size_t i = 0; i < space.entries.size(); ++i) by_key.emplace(space.entries[i].config.key(), i);
    ReplayRun run;
    run.strategy = std::move(strategy);
    run.seed = trace.seed;
    std::vector<bool> done(space.entries.size(), false);
    double elapsed = 0;
    for (std::size_t k = 0; k < trace.configs.size(); ++k) {
        const auto it = by_key.find(trace.configs[k].key());
        if (it == by_key.end())
            throw Error(ErrorCategory::bad_input, fmt::format("{} (seed {}) evaluated {}, not in {}", run.strategy,
                                                              run.seed, trace.configs[k].key(), space.name));
        if (done[it->second])
            throw Error(ErrorCategory::bad_input,
                        fmt::format("{} (seed {}) evaluated {} twice", run.strategy, run.seed, trace.configs[k].key()));
        done[it->second] = true;
        const ReplayEntry& e = space.entries[it->second];
        if (count_strategy_time && !trace.own_time_s.empty()) elapsed += trace.own_time_s[k];
        elapsed += e.cost_s;
        run.evaluations.push_back(
            {it->second, e.status == Status::ok ? e.value : std::numeric_limits<double>::quiet_NaN(), elapsed});
    }
    return run;
}

}  // namespace ktune
