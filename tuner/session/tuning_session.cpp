#include "tuner/session/tuning_session.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "kernels/op.hpp"
#include "tuner/jit/compile_service.hpp"
#include "tuner/session/environment.hpp"
#include "tuner/session/gpu_worker.hpp"
#include "tuner/session/op_lookup.hpp"
#include "tuner/session/space_measurer.hpp"
#include "tuner/space/search_space.hpp"
#include "tuner/strategy/strategy.hpp"

namespace ktune {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool matches(const NamedValues& values, const NamedValues& filter) {
    for (const auto& [name, value] : filter) {
        const auto v = lookup(values, name);
        if (!v || *v != value) return false;
    }
    return true;
}

bool matches_any(const NamedValues& values, const std::vector<NamedValues>& filters) {
    return filters.empty() ||
           std::any_of(filters.begin(), filters.end(), [&](const NamedValues& f) { return matches(values, f); });
}

// The space's valid configurations for `p` that the --config filters keep.
std::vector<Config> selected_configs(const SearchSpace& space, const Problem& p, const TuneOptions& o) {
    std::vector<Config> valid = space.valid_configs(p);
    std::erase_if(valid, [&](const Config& c) { return !matches_any(c.values, o.config_filters); });
    return valid;
}

// --config filters must name parameters of the space and keep something: a typo would otherwise select nothing.
void check_config_filters(const SearchSpace& space, const std::vector<Problem>& problems, const TuneOptions& o) {
    const std::vector<NamedValues>& filters = o.config_filters;
    if (filters.empty()) return;
    for (const NamedValues& f : filters)
        for (const auto& [name, value] : f)
            if (std::none_of(space.parameters().begin(), space.parameters().end(),
                             [&](const auto& param) { return param.name == name; }))
                throw Error(ErrorCategory::bad_input, fmt::format("'{}' is not a parameter of {}", name, space.file()),
                            "--config");
    if (std::all_of(problems.begin(), problems.end(),
                    [&](const Problem& p) { return selected_configs(space, p, o).empty(); }))
        throw Error(ErrorCategory::bad_input,
                    fmt::format("no valid configuration of {} matches the --config filters for the selected problems",
                                space.file()),
                    "--config");
}

// The --shape problems in every dtype of the space (select_problems applies --dtype): the space's axes first, in its
// order, then the op's optional axes by name, so one shape always has one problem key.
std::vector<Problem> explicit_problems(const SearchSpace& space, const TuneOptions& o) {
    std::vector<Problem> out;
    for (const NamedValues& shape : o.shapes) {
        NamedValues ordered;
        for (const auto& axis : space.axes()) {
            const auto v = lookup(shape, axis.name);
            if (!v)
                throw Error(ErrorCategory::bad_input,
                            fmt::format("'{}' does not give axis {} of {} (a shape names every axis)",
                                        format_named_values(shape), axis.name, space.file()),
                            "--shape");
            ordered.emplace_back(axis.name, *v);
        }
        NamedValues optional;
        for (const auto& [name, v] : shape)
            if (!lookup(ordered, name)) optional.emplace_back(name, v);
        std::ranges::sort(optional);
        ordered.insert(ordered.end(), optional.begin(), optional.end());
        for (Dtype d : space.dtypes()) out.push_back(Problem{d, ordered});
    }
    return out;
}

std::vector<Problem> select_problems(const SearchSpace& space, const TuneOptions& o) {
    // --dtype first, then --problem, so that an error names the filter that left nothing.
    std::vector<Problem> in_dtypes;
    for (const Problem& p : o.shapes.empty() ? space.problems() : explicit_problems(space, o))
        if (o.dtypes.empty() || std::find(o.dtypes.begin(), o.dtypes.end(), p.dtype) != o.dtypes.end())
            in_dtypes.push_back(p);
    if (in_dtypes.empty()) {
        std::string dtypes;
        for (Dtype d : space.dtypes()) dtypes += (dtypes.empty() ? "" : ", ") + std::string(dtype_name(d));
        throw Error(ErrorCategory::bad_input, fmt::format("{} tunes only {}", space.file(), dtypes), "--dtype");
    }
    std::vector<Problem> out;
    for (const Problem& p : in_dtypes)
        if (matches_any(p.shape, o.problem_filters)) out.push_back(p);
    if (out.empty())
        throw Error(ErrorCategory::bad_input,
                    fmt::format("no {} of {} matches the --problem filters", o.shapes.empty() ? "problem" : "--shape",
                                space.file()),
                    "--problem");
    return out;
}

TuneSummary compile_only_sweep(const SearchSpace& space, const std::vector<Problem>& problems, const TuneOptions& o,
                               CompileService& jit, TuneSummary s, const ProgressCallback& progress) {
    const std::string arch = o.arch.value_or("sm_90");
    const auto t0 = Clock::now();
    s.compile_only = true;
    s.arch = arch;
    std::vector<std::pair<std::string, std::shared_future<CompileResult>>> jobs;
    std::set<std::string> seen;
    for (const Problem& p : problems) {
        ProblemOutcome outcome;
        outcome.problem = p;
        const auto valid = selected_configs(space, p, o);
        outcome.valid_configs = std::int64_t(valid.size());
        s.problems.push_back(outcome);
        auto add = [&](const std::string& source, const std::string& name) {
            if (!seen.insert(source + "|" + name).second) return;
            CompileRequest req;
            req.source_path = source;
            req.name_expressions = {name};
            req.arch = arch;
            jobs.emplace_back(name, jit.submit(std::move(req)));
        };
        add(space.reference_source(), space.reference_name(p.dtype));
        if (!space.is_library())  // a library baseline has only its reference to compile
            for (const Config& c : valid) add(space.kernel_source(), space.kernel_name(c, p.dtype));
    }
    ProgressEvent ev;
    ev.phase = "compile";
    ev.total = std::int64_t(jobs.size());
    if (progress && !s.no_gpu_reason.empty()) {
        ev.notice = fmt::format(
            "{}\nSo this is a compile-only sweep for {}: every valid configuration is compiled, "
            "nothing is timed.",
            s.no_gpu_reason, arch);
        progress(ev);
        ev.notice.clear();
    }
    for (auto& [name, fut] : jobs) {
        const CompileResult& r = fut.get();
        ++ev.done;
        if (r.ok) {
            ++s.compiled;
            if (r.cache_hit) ++s.compile_cache_hits;
        } else {
            ++s.compile_failed;
            ++ev.failed;
            s.compile_errors.push_back(name + ":\n" + first_lines(r.log, 6));
        }
        ev.config = name;
        ev.elapsed_s = seconds_since(t0);
        if (progress) progress(ev);
    }
    s.elapsed_s = seconds_since(t0);
    return s;
}

// The lowest p50 among many configurations is biased low: with near-equal kernels, the one whose estimate came out
// luckiest wins, and two tunings then disagree by more than their measurements' noise (seen on an H100: each
// configuration within ~1 % between two tunings, the best of ~100 up to 3 % apart at 5 us). So the leaders (every
// configuration within 3 % of the best, at most five, fastest first) are measured again with tighter sampling, and
// those unselected measurements replace the first ones; if a configuration not yet confirmed is then best, it is
// confirmed in turn. Confirming only the best was not enough: two tunings still settled on different near-equal
// configurations (2.07 % apart at 4.6 us). Returns the number of re-measurements.
int confirm_leaders(const SearchSpace& space, const Problem& p, const KernelInfo& kernel, const std::string& device_key,
                    std::int64_t run_id, const TuneOptions& o, SpaceMeasurer& measurer, Store& store) {
    constexpr double kLeaderMargin = 1.03;
    constexpr std::size_t kMaxLeaders = 5;
    constexpr int kMaxConfirmations = 8;
    // At least 200 samples: event times come in 32 ns ticks, so at ~5 us a few dozen samples can put the median's
    // order-statistic bounds on one tick and stop the rule early while the median itself still moves by ticks from
    // one process to the next (seen on an H100: n = 14-50, the same configuration 4.38-4.64 us in three tunings).
    constexpr int kMinConfirmationSamples = 200;
    // A leader's kernel time (what ranks decode sizes, and what reports quote for microsecond kernels) from at least
    // 200 CUPTI samples over the buffers' rotation copies, not the 5 or 32 of a first measurement.
    constexpr int kConfirmationCuptiSamples = 200;
    wire::TimingOptions timing = o.timing;
    timing.min_samples = std::min(timing.max_samples, std::max(kMinConfirmationSamples, 3 * timing.min_samples));
    timing.target_rel = timing.target_rel / 2;
    if (timing.cupti_samples > 0) timing.cupti_samples = std::max(timing.cupti_samples, kConfirmationCuptiSamples);
    // Where the kernel time ranks (decode sizes), a leader is measured in kKernelRankedRounds rounds, pooled, each of
    // an eighth of the event samples and of a first measurement's CUPTI samples (kKernelRankedCuptiSamples): a ~2 us
    // kernel's time falls in one of two modes ~70 ns apart for a whole measurement and independently from one
    // measurement to the next (seen on an H100; docs/measuring.md), so one measurement of 200 samples left
    // two tunings up to 3.5 % apart at M = 1. Fixed counts per round (no stopping rule: 25 samples would never meet
    // the CI target and run to the time cap).
    constexpr int kKernelRankedRounds = 8;
    int rounds = 1;
    if (measurer.rank_timer_for(p, timing) == RankTimer::kernel) {
        rounds = kKernelRankedRounds;
        timing.min_samples = timing.max_samples = std::max(timing.min_samples / rounds, 6);
        timing.cupti_samples = kKernelRankedCuptiSamples;
    }

    // The problem's ok results, read once; confirmations update this ranking in place rather than reading the
    // store (and every result's raw samples) again after each one.
    ResultFilter f;
    f.op = kernel.op;
    f.variant = kernel.variant;
    f.device_key = device_key;
    f.source_hash = kernel.source_hash;
    f.problem_key = p.key();
    f.status = Status::ok;
    // By configuration key: the rank Store::best will order them by (best_rank), so that the configuration confirmed
    // last is the one stored as best, ties included.
    std::map<std::string, std::tuple<double, bool, double>> rank;
    for (const ResultRecord& r : store.results(f))
        if (r.measurement.stats.p50 > 0) rank[r.config_key] = best_rank(r.measurement);

    std::set<std::string> confirmed;
    auto confirm = [&](const std::string& config_key) {
        const Config c = space.parse_config(config_key, "stored configuration");
        ResultRecord rec{kernel,
                         c.key(),
                         p,
                         device_key,
                         run_id,
                         utc_now_iso(),
                         measurer.measure_pooled(c, p, timing, rounds, o.timeout_floor_s)};
        store.record(rec, /*replace=*/true);
        confirmed.insert(config_key);
        if (rec.measurement.status == Status::ok && rec.measurement.stats.p50 > 0)
            rank[config_key] = best_rank(rec.measurement);
        else
            rank.erase(config_key);
    };

    std::vector<std::pair<std::tuple<double, bool, double>, std::string>> leaders;  // fastest first
    for (const auto& [key, r] : rank) leaders.emplace_back(r, key);
    std::ranges::sort(leaders);
    for (const auto& [r, key] : leaders) {
        if (confirmed.size() == kMaxLeaders || std::get<0>(r) > kLeaderMargin * std::get<0>(leaders.front().first))
            break;
        confirm(key);
    }
    while (int(confirmed.size()) < kMaxConfirmations && !rank.empty()) {
        const std::string best =
            std::ranges::min_element(rank, {}, [](const auto& entry) { return entry.second; })->first;
        if (confirmed.contains(best)) break;
        confirm(best);
    }
    return int(confirmed.size());
}

}  // namespace

NamedValues parse_named_values(const std::string& text, const std::string& where, std::string_view name_kind) {
    NamedValues out;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = text.find(',', start);
        const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        const std::size_t eq = item.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
            throw Error(ErrorCategory::bad_input,
                        fmt::format("'{}' is not {}=VALUE (write e.g. {})", item, name_kind,
                                    name_kind == "AXIS" ? "M=4096,H=8192" : "BLOCK=256,VEC=8"),
                        where);
        try {
            std::size_t used = 0;
            const long long v = std::stoll(item.substr(eq + 1), &used);
            if (used != item.size() - eq - 1) throw std::invalid_argument("trailing characters");
            out.emplace_back(item.substr(0, eq), v);
        } catch (const std::exception&) {
            throw Error(ErrorCategory::bad_input, fmt::format("'{}' needs an integer value", item), where);
        }
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

namespace {

// Tunes one kernel of the space file (all of it, for a file of one kernel).
TuneSummary tune_space(const SearchSpace& space, const TuneOptions& options, const ProgressCallback& progress) {
    const auto t0 = Clock::now();
    TuneOptions o = options;
    for (const std::string& f : options.config_filter_texts)
        o.config_filters.push_back(space.parse_config_filter(f, "--config"));
    const OpDescription& op = op_of(space);
    space.require_some_valid_config();
    const std::vector<Problem> problems = select_problems(space, o);
    check_config_filters(space, problems, o);
    for (const Problem& p : problems) {
        op.buffers(p);  // a shape the op cannot take fails now, before any work
        if (!o.shapes.empty() && space.valid_configs(p).empty())
            throw Error(ErrorCategory::bad_input,
                        fmt::format("no configuration of {} is valid at {} (its constraints and prune rules)",
                                    space.file(), p.key()),
                        "--shape");
    }
    space.check_launches();                  // a bad grid for any problem fails now, GPU or not (--compile-only)
    plan_strategy(o.strategy, o.budget, 0);  // a bad --strategy or --budget fails now too

    // Kernel sources resolve against the root, then the space file's own folder: a user's op kept beside its YAML,
    // outside the repository, needs no --root of its own.
    CompileService jit({o.root, o.cache_dir, "", o.threads},
                       {std::filesystem::absolute(space.file()).parent_path().string()});
    TuneSummary s;
    std::unique_ptr<GpuWorker> gpu;
    if (!o.compile_only) {
        gpu = std::make_unique<GpuWorker>(o.worker_path, o.device, jit);
        try {
            gpu->start();
        } catch (const Error& e) {
            if (e.category() != ErrorCategory::no_gpu) throw;
            s.no_gpu_reason = e.message();
            gpu.reset();
        }
    }
    if (!gpu) return compile_only_sweep(space, problems, o, jit, std::move(s), progress);

    DeviceInfo device = gpu->device();
    if (o.timing.cold_l2 && o.timing.clean_flush && device.cc_major < 8)  // no discard.global.L2 before sm_80
        throw Error(
            ErrorCategory::bad_input,
            fmt::format("the clean flush needs sm_80 or newer and this GPU is {}: use --flush dirty", device.arch()),
            "--flush");
    Store store = Store::open(o.db_path);
    s.arch = device.arch();
    if (auto known = store.device(device.key); known && known->copy_gbps > 0) {
        device.copy_gbps = known->copy_gbps;
        device.launch_floor_us = known->launch_floor_us;
        device.measured_at = known->measured_at;
    } else {
        const DeviceCeilings c = gpu->measure_ceilings(std::size_t{1} << 30);
        device.copy_gbps = c.copy_gbps;
        device.launch_floor_us = c.launch_floor_us;
        device.measured_at = utc_now_iso();
    }
    store.upsert_device(device);
    s.device = device;

    RunInfo run;
    run.started_at = utc_now_iso();
    run.git_revision = git_revision(o.root);
    run.command_line = o.command_line;
    run.device_key = device.key;
    run.status = "running";
    run.environment_json = nlohmann::json{
        {"hostname", hostname()},
        {"ktune", ktune_version()},
        {"cuda_toolkit", cuda_toolkit_version()},
        {"nvrtc", CompileService::nvrtc_version()},
        {"driver", device.driver_version},
        {"device", gpu->props()},
        {"space", o.space_path},
        {"strategy", o.strategy},
        {"seed", o.seed},
        {"timing", o.timing}}.dump();
    s.run_id = store.begin_run(run);

    const KernelInfo kernel = kernel_identity(space, jit, o.timing);
    SpaceMeasurer measurer(space, op, jit, *gpu, o.seed);

    // Plan every problem first, so compilation of all of it overlaps the measurements.
    struct Planned {
        Problem problem;
        StrategyPlan plan;
        std::unique_ptr<SearchStrategy> strategy;
        std::vector<Config> batch;
        std::int64_t expected = 0;  // configurations it will propose: the budget, or every valid one
        ProblemOutcome outcome;
        std::map<std::string, Measurement> stored;  // resume: what the store holds, told to the strategy again
    };
    std::vector<Planned> planned;
    std::int64_t total = 0;
    for (const Problem& p : problems) {
        std::vector<Config> valid = selected_configs(space, p, o);
        Planned pl{p, plan_strategy(o.strategy, o.budget, valid.size()), {}, {}, 0, {}, {}};
        pl.strategy = make_strategy(pl.plan.name, {pl.plan.budget, o.seed});
        pl.outcome.problem = p;
        pl.outcome.valid_configs = std::int64_t(valid.size());
        pl.expected = std::min(pl.outcome.valid_configs, pl.plan.budget.value_or(pl.outcome.valid_configs));
        if (!o.force) {
            ResultFilter f;
            f.op = kernel.op;
            f.variant = kernel.variant;
            f.device_key = device.key;
            f.source_hash = kernel.source_hash;
            f.problem_key = p.key();
            for (ResultRecord& r : store.results(f)) pl.stored.emplace(r.config_key, std::move(r.measurement));
        }
        pl.strategy->begin(p, std::move(valid));
        pl.batch = pl.strategy->propose();
        for (const Config& c : pl.batch)
            if (!pl.stored.contains(c.key())) measurer.prefetch(c, p.dtype);
        total += pl.expected;
        planned.push_back(std::move(pl));
    }

    ProgressEvent ev;
    ev.total = total;
    for (Planned& pl : planned) {
        const Problem& p = pl.problem;
        ev.problem = p.key();
        // A search chosen for a large space says so, with its budget, on the progress line.
        ev.phase = pl.plan.automatic
                       ? fmt::format("measure [{} {} of {}]", pl.plan.name, pl.expected, pl.outcome.valid_configs)
                       : "measure";
        while (!pl.batch.empty() && !s.time_limit_hit) {
            for (const Config& c : pl.batch) {
                ++pl.outcome.proposed;
                ev.config = c.key();
                if (const auto stored = pl.stored.find(c.key()); stored != pl.stored.end()) {
                    ++pl.outcome.skipped;
                    ++ev.skipped;
                    ++ev.done;
                    pl.strategy->observe(c, stored->second);
                    if (progress) progress(ev);
                    continue;
                }
                if (o.time_limit_s && seconds_since(t0) > *o.time_limit_s) {
                    s.time_limit_hit = true;
                    break;
                }
                ResultRecord rec{kernel,
                                 c.key(),
                                 p,
                                 device.key,
                                 s.run_id,
                                 utc_now_iso(),
                                 measurer.measure(c, p, o.timing, o.timeout_floor_s)};
                const Measurement& m = rec.measurement;
                store.record(rec, o.force);
                pl.strategy->observe(c, m);
                ++pl.outcome.measured;
                ++s.status_counts[std::string(status_name(m.status))];
                if (m.status != Status::ok) {
                    ++pl.outcome.failed;
                    ++ev.failed;
                }
                ++ev.measured;
                ++ev.done;
                ev.elapsed_s = seconds_since(t0);
                if (progress) progress(ev);
            }
            if (s.time_limit_hit) break;
            // Adaptive strategies propose more after seeing results; the next batch compiles while this problem's
            // progress is reported.
            pl.batch = pl.strategy->propose();
            for (const Config& c : pl.batch)
                if (!pl.stored.contains(c.key())) measurer.prefetch(c, p.dtype);
        }
        if (s.time_limit_hit) break;
        ev.total -= pl.expected - pl.outcome.proposed;  // a strategy may stop before its budget
        // Whatever the strategy, the leaders are measured again.
        if (pl.outcome.measured > 0) {
            ev.phase = "confirm";
            if (progress) progress(ev);
            s.confirmations += confirm_leaders(space, p, kernel, device.key, s.run_id, o, measurer, store);
        }
    }

    const auto best = store.best(kernel.op, kernel.variant, device.key, {kernel.source_hash});
    for (Planned& pl : planned) {
        for (const ResultRecord& r : best)
            if (r.problem.key() == pl.problem.key()) pl.outcome.best = r;
        s.problems.push_back(std::move(pl.outcome));
    }
    store.finish_run(s.run_id, s.time_limit_hit ? "time_limit" : "finished");
    s.worker_restarts = gpu->restarts();
    s.elapsed_s = seconds_since(t0);
    return s;
}

// One summary of several kernels' tunings: counts add up, and each problem's best is the best of every kernel's.
void merge_summary(TuneSummary& into, TuneSummary&& s) {
    if (into.problems.empty() && into.status_counts.empty() && into.compiled == 0) {
        into = std::move(s);
        return;
    }
    for (const auto& [status, n] : s.status_counts) into.status_counts[status] += n;
    into.compiled += s.compiled;
    into.compile_failed += s.compile_failed;
    into.compile_cache_hits += s.compile_cache_hits;
    into.compile_errors.insert(into.compile_errors.end(), s.compile_errors.begin(), s.compile_errors.end());
    into.worker_restarts += s.worker_restarts;
    into.confirmations += s.confirmations;
    into.time_limit_hit = into.time_limit_hit || s.time_limit_hit;
    for (ProblemOutcome& p : s.problems) {
        auto same = std::find_if(into.problems.begin(), into.problems.end(),
                                 [&](const ProblemOutcome& q) { return q.problem == p.problem; });
        if (same == into.problems.end()) {
            into.problems.push_back(std::move(p));
            continue;
        }
        same->valid_configs += p.valid_configs;
        same->proposed += p.proposed;
        same->measured += p.measured;
        same->skipped += p.skipped;
        same->failed += p.failed;
        if (p.best && (!same->best || best_rank(p.best->measurement) < best_rank(same->best->measurement)))
            same->best = std::move(p.best);
    }
}

}  // namespace

TuneSummary run_tuning(const TuneOptions& o, const ProgressCallback& progress) {
    const auto t0 = Clock::now();
    std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(o.space_path);
    if (!o.alternatives.empty()) {
        for (const std::string& name : o.alternatives)
            if (std::none_of(kernels.begin(), kernels.end(),
                             [&](const SearchSpace& k) { return k.alternative() == name; }))
                throw Error(ErrorCategory::bad_input,
                            fmt::format("{} has no alternative kernel '{}'", o.space_path, name), "--kernel");
        std::erase_if(kernels, [&](const SearchSpace& k) {
            return std::find(o.alternatives.begin(), o.alternatives.end(), k.alternative()) == o.alternatives.end();
        });
    }
    if (kernels.size() > 1 && !o.config_filter_texts.empty()) {
        // --config names parameters of some kernels: the others have no configuration it could match.
        std::erase_if(kernels, [&](const SearchSpace& k) {
            return std::any_of(o.config_filter_texts.begin(), o.config_filter_texts.end(), [&](const std::string& f) {
                try {
                    k.parse_config_filter(f, "--config");
                    return false;
                } catch (const Error& e) {
                    if (e.category() != ErrorCategory::bad_input) throw;
                    return true;
                }
            });
        });
        if (kernels.empty())
            throw Error(
                ErrorCategory::bad_input,
                fmt::format("no kernel of {} takes every --config filter (its parameters and values)", o.space_path),
                "--config");
    }
    if (kernels.size() > 1) {
        // A kernel whose rules keep none of its configurations at the selected problems (one kept for other shapes:
        // decode attention's SIMT kernel where the tensor cores run) is skipped; the file fails, as a space of one
        // kernel does, only when no kernel has any.
        const auto has_valid = [&](const SearchSpace& k) {
            const std::vector<Problem> problems = select_problems(k, o);
            return std::any_of(problems.begin(), problems.end(),
                               [&](const Problem& p) { return k.count_valid_configs(p) > 0; });
        };
        if (std::any_of(kernels.begin(), kernels.end(), has_valid))
            std::erase_if(kernels, [&](const SearchSpace& k) {
                if (has_valid(k)) return false;
                if (progress) {
                    ProgressEvent ev;
                    ev.notice =
                        fmt::format("kernel {}: no valid configuration at these problems, skipped", k.alternative());
                    progress(ev);
                }
                return true;
            });
    }
    TuneSummary s;
    for (const SearchSpace& k : kernels) {
        if (progress && !k.alternative().empty()) {
            ProgressEvent ev;
            ev.notice = fmt::format("kernel {} ({})", k.alternative(), k.kernel_name_template());
            progress(ev);
        }
        TuneOptions rest = o;  // --time bounds the whole run, every kernel together
        if (o.time_limit_s) rest.time_limit_s = std::max(0.0, *o.time_limit_s - seconds_since(t0));
        merge_summary(s, tune_space(k, rest, progress));
        if (s.time_limit_hit) break;
    }
    s.elapsed_s = seconds_since(t0);
    return s;
}

}  // namespace ktune
