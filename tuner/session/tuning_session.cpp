#include "tuner/session/tuning_session.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "kernels/op.hpp"
#include "tuner/jit/compile_service.hpp"
#include "tuner/session/devices.hpp"
#include "tuner/session/environment.hpp"
#include "tuner/session/gpu_worker.hpp"
#include "tuner/session/history.hpp"
#include "tuner/session/op_lookup.hpp"
#include "tuner/session/space_file.hpp"
#include "tuner/session/space_measurer.hpp"
#include "tuner/session/work_queue.hpp"
#include "tuner/session/worker_client.hpp"
#include "tuner/space/search_space.hpp"
#include "tuner/strategy/strategy.hpp"
#include "tuner/strategy/transfer.hpp"

namespace ktune {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

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

// Problems per GPU above which a GPU measures whole problems rather than parts of each (tune_device).
constexpr std::size_t kWholeProblemsPerGpu = 4;

// The device a compile-only sweep files its rows under: the target architecture and the compiler, no GPU.
DeviceInfo compile_only_device(const std::string& arch) {
    DeviceInfo d;
    d.name = "compile-only " + arch;
    if (arch.size() > 4 && arch.starts_with("sm_")) {
        const std::string digits = arch.substr(3, arch.find_first_not_of("0123456789", 3) - 3);
        if (digits.size() >= 2) {
            d.cc_major = std::stoi(digits.substr(0, digits.size() - 1));
            d.cc_minor = digits.back() - '0';
        }
    }
    d.cuda_version = cuda_toolkit_version();
    d.nvrtc_version = CompileService::nvrtc_version();
    d.host = hostname();
    d.key = fmt::format("compile-only|{}|cuda {}|nvrtc {}", arch, d.cuda_version, d.nvrtc_version);
    return d;
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
    ResultFilter f = problem_results(kernel, device_key, p);
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

void parse_gpus(const std::string& text, TuneOptions& o) {
    if (text == "all") {
        o.all_gpus = true;
        return;
    }
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = text.find(',', start);
        const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        int g = -1;
        const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), g);
        if (ec != std::errc() || end != item.data() + item.size() || item.empty() || g < 0)
            throw Error(ErrorCategory::bad_input,
                        fmt::format("'{}' is not a GPU ordinal (write all, or ordinals such as 0,2,3)", item),
                        "--gpus");
        if (std::find(o.gpus.begin(), o.gpus.end(), g) != o.gpus.end())
            throw Error(ErrorCategory::bad_input, fmt::format("GPU {} is named twice", g), "--gpus");
        o.gpus.push_back(g);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
}

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

// One progress line for every GPU of a run, whichever device and lane reports; calls the callback under its lock, so
// the callback never runs twice at once.
class RunProgress {
public:
    RunProgress(const ProgressCallback& callback, Clock::time_point t0) : m_callback(callback), m_t0(t0) {}
    template <typename Change>
    void update(const Change& change) {
        std::lock_guard lock(m_mutex);
        change(m_ev);
        m_ev.elapsed_s = seconds_since(m_t0);
        if (m_callback) m_callback(m_ev);
    }
    void notice(const std::string& text) {
        std::lock_guard lock(m_mutex);
        m_ev.notice = text;
        if (m_callback) m_callback(m_ev);
        m_ev.notice.clear();
    }
    GpuProgress& gpu(ProgressEvent& ev, int ordinal) {
        for (GpuProgress& g : ev.gpus)
            if (g.ordinal == ordinal) return g;
        return ev.gpus.emplace_back(GpuProgress{ordinal});
    }

private:
    std::mutex m_mutex;
    const ProgressCallback& m_callback;
    Clock::time_point m_t0;
    ProgressEvent m_ev;
};

// Compiles every valid configuration of the selected problems (the shard's part of them) for the target architecture,
// and files each as a row of status compiled or compile_error under compile_only_device(), with what ptxas said: a
// sweep's shards merge like a tuning's (`ktune db merge`).
TuneSummary compile_only_sweep(const SearchSpace& space, const std::vector<Problem>& problems, const TuneOptions& o,
                               CompileService& jit, TuneSummary s, RunProgress& progress) {
    const std::string arch = o.arch.value_or("sm_90");
    const auto t0 = Clock::now();
    s.compile_only = true;
    s.arch = arch;
    s.shard = o.shard;
    std::map<std::string, std::shared_future<CompileResult>> jobs;  // by source|name, in submission order below
    std::vector<std::string> job_order;
    struct Row {
        const Problem* problem;
        Config config;
        std::string job;
    };
    std::vector<Row> rows;
    auto add = [&](const std::string& source, const std::string& name, const std::vector<std::string>& options,
                   const std::string& target_arch) {
        const std::string job = compile_key(source, name, options, target_arch);
        if (jobs.contains(job)) return job;
        CompileRequest req;
        req.source_path = source;
        req.name_expressions = {name};
        req.arch = target_arch;
        req.extra_options = options;
        jobs.emplace(job, jit.submit(std::move(req)));
        job_order.push_back(job);
        return job;
    };
    for (std::size_t pi = 0; pi < problems.size(); ++pi) {
        const Problem& p = problems[pi];
        ProblemOutcome outcome;
        outcome.problem = p;
        const auto valid = selected_configs(space, p, o);
        std::vector<const Config*> mine;
        for (std::size_t j = 0; j < valid.size(); ++j)
            if (o.shard.takes_config(pi, j)) mine.push_back(&valid[j]);
        outcome.valid_configs = std::int64_t(mine.size());
        s.problems.push_back(outcome);
        if (mine.empty()) continue;
        add(space.reference_source(), space.reference_name(p.dtype), space.reference_compile_options(), arch);
        if (space.is_library()) continue;  // a library baseline has only its reference to compile
        for (const Config* c : mine)
            rows.push_back(Row{&p, *c,
                               add(space.kernel_source(), space.kernel_name(*c, p.dtype), space.compile_options(*c),
                                   space.target_arch(arch))});
    }
    if (!s.no_gpu_reason.empty())
        progress.notice(
            fmt::format("{}\nSo this is a compile-only sweep for {}: every valid configuration is compiled, "
                        "nothing is timed.",
                        s.no_gpu_reason, arch));
    progress.update([&](ProgressEvent& ev) {
        ev.phase = "compile";
        ev.total += std::int64_t(jobs.size());
    });
    for (const std::string& job : job_order) {
        const CompileResult& r = jobs.at(job).get();
        if (r.ok) {
            ++s.compiled;
            if (r.cache_hit) ++s.compile_cache_hits;
        } else {
            ++s.compile_failed;
            s.compile_errors.push_back(job.substr(job.find('|') + 1) + ":\n" + first_lines(r.log, 6));
        }
        progress.update([&](ProgressEvent& ev) {
            ++ev.done;
            if (!r.ok) ++ev.failed;
            ev.config = job.substr(job.find('|') + 1);
        });
    }
    if (!rows.empty()) {
        Store store = Store::open(o.db_path);
        const DeviceInfo device = compile_only_device(arch);
        store.upsert_device(device);
        RunInfo run;
        run.git_revision = git_revision(o.root);
        run.command_line = o.command_line;
        run.device_key = device.key;
        run.host = device.host;
        run.environment_json = nlohmann::json{
            {"hostname", run.host},
            {"ktune", ktune_version()},
            {"cuda_toolkit", cuda_toolkit_version()},
            {"nvrtc", CompileService::nvrtc_version()},
            {"compile_only", arch},
            {"shard", o.shard.text()},
            {"space",
             o.space_path}}.dump();
        s.run_id = store.begin_run(run);
        const KernelInfo kernel = kernel_identity(space, jit, o.timing);
        for (const Row& row : rows) {
            const CompileResult& r = jobs.at(row.job).get();
            Measurement m;
            m.status = r.ok ? Status::compiled : Status::compile_error;
            if (r.ok) {
                m.compile = r.kernels.at(0).info;
            } else {
                m.message = r.log;
            }
            m.compile.compile_seconds = r.compile_seconds;
            m.compile.cache_hit = r.cache_hit;
            store.record(ResultRecord{kernel, row.config.key(), *row.problem, device.key, s.run_id, utc_now_iso(), m},
                         o.force);
        }
        store.finish_run(s.run_id, "finished");
    }
    s.elapsed_s = seconds_since(t0);
    return s;
}

// The GPUs --gpus (or --device) selects, each with its worker started, in parallel. With --gpus, a GPU whose worker
// cannot start is dropped with a notice while any other starts. None at all: `no_gpu_reason` says why when there is
// no usable GPU (the caller sweeps compile-only instead); other failures throw.
std::vector<std::unique_ptr<GpuWorker>> start_gpus(const TuneOptions& o, CompileService& jit,
                                                   std::string& no_gpu_reason, RunProgress& progress) {
    std::vector<std::unique_ptr<GpuWorker>> gpus;
    if (!o.all_gpus && o.gpus.empty()) {
        auto gpu = std::make_unique<GpuWorker>(o.worker_path, o.device, jit);
        try {
            gpu->start();
            gpus.push_back(std::move(gpu));
        } catch (const Error& e) {
            if (e.category() != ErrorCategory::no_gpu) throw;
            no_gpu_reason = e.message();
        }
        return gpus;
    }
    std::size_t count = 0;
    try {
        WorkerClient probe(o.worker_path);
        count = probe.start().at("devices").size();
    } catch (const Error& e) {
        if (e.category() != ErrorCategory::no_gpu) throw;
        no_gpu_reason = e.message();
        return gpus;
    }
    if (count == 0) {
        no_gpu_reason = "the NVIDIA driver is loaded but sees no GPU";
        return gpus;
    }
    std::vector<int> ordinals = o.gpus;
    if (o.all_gpus)
        for (std::size_t i = 0; i < count; ++i) ordinals.push_back(int(i));
    for (int g : ordinals)
        if (g >= int(count))
            throw Error(ErrorCategory::bad_input,
                        fmt::format("no GPU {}: this machine has {} (0 to {})", g, count, count - 1), "--gpus");
    std::vector<std::future<void>> starts;
    for (int g : ordinals) {
        gpus.push_back(std::make_unique<GpuWorker>(o.worker_path, g, jit));
        starts.push_back(std::async(std::launch::async, [gpu = gpus.back().get()] { gpu->start(); }));
    }
    std::optional<Error> first_failure;
    for (std::size_t i = 0; i < starts.size(); ++i) {
        try {
            starts[i].get();
        } catch (const Error& e) {
            if (e.category() == ErrorCategory::bad_input) throw;
            progress.notice(fmt::format("GPU {} dropped: its worker did not start: {}", ordinals[i], e.message()));
            if (!first_failure) first_failure = e;
            gpus[i].reset();
        }
    }
    std::erase(gpus, nullptr);
    if (gpus.empty() && first_failure) {
        if (first_failure->category() != ErrorCategory::no_gpu) throw *first_failure;
        no_gpu_reason = first_failure->message();
    }
    return gpus;
}

// The GPUs of one device: one key and calibrations that agree (group_equivalent_gpus), sharing its work.
struct DeviceGroup {
    DeviceInfo device;
    std::vector<GpuWorker*> gpus;
};

// Each GPU's calibration: one GPU alone reuses what the store holds for its key when measured on this host; several
// are measured (in parallel), as pooling them compares their calibrations. Devices are filed under Store::filing_key:
// a key the store holds with another calibration (another host kind) keeps its results apart.
std::vector<DeviceGroup> calibrate(const std::vector<std::unique_ptr<GpuWorker>>& gpus, Store& store,
                                   RunProgress& progress) {
    constexpr std::size_t kCopyBytes = std::size_t{1} << 30;
    const std::string host = hostname();
    std::vector<DeviceInfo> devices;
    for (const auto& gpu : gpus) {
        devices.push_back(gpu->device());
        devices.back().host = host;
    }
    if (gpus.size() == 1) {
        DeviceInfo& d = devices.front();
        if (auto known = store.device(d.key);
            known && known->copy_gbps > 0 && (known->host.empty() || known->host == host)) {
            d.copy_gbps = known->copy_gbps;
            d.launch_floor_us = known->launch_floor_us;
            d.launch_floor_cupti_us = known->launch_floor_cupti_us;
            d.measured_at = known->measured_at;
            d.host = known->host;
        } else {
            d = with_ceilings(d, gpus.front()->measure_ceilings(kCopyBytes));
        }
    } else {
        std::vector<std::future<DeviceCeilings>> ceilings;
        for (const auto& gpu : gpus)
            ceilings.push_back(
                std::async(std::launch::async, [g = gpu.get()] { return g->measure_ceilings(kCopyBytes); }));
        for (std::size_t i = 0; i < gpus.size(); ++i) devices[i] = with_ceilings(devices[i], ceilings[i].get());
    }
    std::vector<std::string> notices;
    std::vector<DeviceGroup> groups;
    for (const auto& members : group_equivalent_gpus(devices, notices)) {
        DeviceGroup g{devices[members.front()], {}};
        for (std::size_t i : members) g.gpus.push_back(gpus[i].get());
        std::string difference;
        const std::string key = store.filing_key(g.device, &difference);
        if (key != g.device.key) {
            notices.push_back(
                fmt::format("{} holds device {} with another calibration ({}): this one's results are kept "
                            "apart as {}",
                            store.path(), g.device.key, difference, key));
            g.device.key = key;
        }
        store.upsert_device(g.device);
        groups.push_back(std::move(g));
    }
    for (const std::string& n : notices) progress.notice(n);
    return groups;
}

// Tunes the selected problems on the GPUs of one device, the work spread over them as they free up (WorkQueue): a
// problem tuned exhaustively in parts, any part on any GPU; a problem under a search on one GPU, as its strategy
// learns from each result in turn. Each GPU's thread writes through its own store connection.
TuneSummary tune_device(const SearchSpace& space, const OpDescription& op, const std::vector<Problem>& problems,
                        const TuneOptions& o, CompileService& jit, const DeviceGroup& group, RunProgress& progress,
                        Clock::time_point t0) {
    TuneSummary s;
    const DeviceInfo& device = group.device;
    const std::size_t lanes = group.gpus.size();
    s.arch = device.arch();
    s.device = device;
    s.shard = o.shard;
    for (GpuWorker* g : group.gpus) s.gpus.push_back(g->ordinal());

    std::vector<Store> stores;
    for (std::size_t i = 0; i < lanes; ++i) stores.push_back(Store::open(o.db_path));
    RunInfo run;
    run.started_at = utc_now_iso();
    run.git_revision = git_revision(o.root);
    run.command_line = o.command_line;
    run.device_key = device.key;
    run.status = "running";
    run.host = hostname();
    run.environment_json = nlohmann::json{
        {"hostname", run.host},
        {"ktune", ktune_version()},
        {"cuda_toolkit", cuda_toolkit_version()},
        {"nvrtc", CompileService::nvrtc_version()},
        {"driver", device.driver_version},
        {"device", group.gpus.front()->props()},
        {"gpus", s.gpus},
        {"shard", o.shard.text()},
        {"space", o.space_path},
        {"strategy", o.strategy},
        {"seed", o.seed},
        {"timing", o.timing}}.dump();
    s.run_id = stores.front().begin_run(run);

    const KernelInfo kernel = kernel_identity(space, jit, o.timing);
    SharedCompiles compiles(jit, device.arch());
    std::vector<std::unique_ptr<SpaceMeasurer>> measurers;
    for (GpuWorker* g : group.gpus)
        measurers.push_back(std::make_unique<SpaceMeasurer>(space, op, compiles, *g, o.seed));

    // Plan every problem first, so compilation of all of it overlaps the measurements.
    struct Planned {
        Problem problem;
        StrategyPlan plan;
        std::unique_ptr<SearchStrategy> strategy{};
        bool split = false;                        // exhaustive: its configurations measured in parts, on any GPU
        std::vector<std::vector<Config>> parts{};  // split: the parts; else the strategy's first batch
        std::int64_t expected = 0;                 // configurations it will propose: the budget, or every valid one
        ProblemOutcome outcome{};
        std::map<std::string, Measurement> stored{};  // resume: what the store holds, told to the strategy again
        bool transfer = false;                // the first batch waits for the winners of the problems tuned before it
        std::vector<TunedProblem> history{};  // transfer: the winners of other problems stored by earlier runs
        std::int64_t history_before = 0;      // transfer: the history as it stood when the problem was first measured
    };
    std::vector<Planned> planned;
    std::int64_t total = 0;
    // The winners a search starts from: the stored fastest of each problem of this run finished before it (after its
    // confirmation), so that a resumed run proposes what the first did and measures nothing again.
    std::vector<TunedProblem> tuned;
    // And their results, ordered by problem key (as the history's), for a search that learns across problems.
    std::vector<ProblemResults> tuned_results;
    // And the tuning history: other problems' winners from earlier runs (not this run's problems, which hand theirs on
    // as they finish), read once, if a problem is searched.
    std::optional<std::vector<StoredResult>> history;
    std::set<std::string> history_problems;  // for the notice: those that gave a search at least one winner
    // Triage among the alternative kernels tuned (transfer.hpp): their stored bests, read once, if a problem is
    // searched.
    std::optional<std::vector<KernelBest>> kernel_bests;
    std::int64_t triaged = 0;  // for the notice: problems where this kernel's budget shrank
    for (std::size_t pi = 0; pi < problems.size(); ++pi) {
        const Problem& p = problems[pi];
        std::vector<Config> valid = selected_configs(space, p, o);
        Planned pl{.problem = p, .plan = plan_strategy(o.strategy, o.budget, valid.size())};
        if (o.transfer && pl.plan.budget && pl.plan.name != "exhaustive" && o.alternatives_tuned.size() > 1) {
            if (!kernel_bests) kernel_bests = stored_kernel_bests(stores.front(), kernel, device.key);
            std::vector<TriagedKernel> kernels;
            std::size_t me = 0;
            for (const SearchSpace* k : o.alternatives_tuned) {
                if (k == &space) me = kernels.size();
                const auto n = std::int64_t(k == &space ? valid.size() : k->count_valid_configs(p));
                const StrategyPlan plan = plan_strategy(o.strategy, o.budget, std::size_t(n));
                kernels.push_back({k->alternative(), n, plan.name == "exhaustive" ? std::nullopt : plan.budget});
            }
            const Triage t =
                triage_budget(p, kernels, me, *kernel_bests, o.triage_before_run > 0 ? o.triage_before_run : s.run_id);
            if (t.budget != std::min<std::int64_t>(*pl.plan.budget, std::int64_t(valid.size()))) {
                pl.outcome.triage.push_back({space.alternative(), t.expected_slowdown, t.budget, *pl.plan.budget});
                triaged += t.budget < *pl.plan.budget;
                pl.plan.budget = t.budget;
            }
        }
        // The plan is made on the whole space, so every shard makes the same; a shard then takes its configurations of
        // an exhaustive problem, or a searched problem whole.
        pl.split = pl.plan.name == "exhaustive" && !pl.plan.budget;
        if (!pl.split && !o.shard.takes_problem(pi)) continue;
        if (pl.split && !o.shard.whole()) {
            std::vector<Config> mine;
            for (std::size_t j = 0; j < valid.size(); ++j)
                if (o.shard.takes_config(pi, j)) mine.push_back(std::move(valid[j]));
            valid = std::move(mine);
        }
        pl.strategy = make_strategy(pl.plan.name, {pl.plan.budget, o.seed});
        pl.outcome.problem = p;
        pl.outcome.valid_configs = std::int64_t(valid.size());
        pl.expected = std::min(pl.outcome.valid_configs, pl.plan.budget.value_or(pl.outcome.valid_configs));
        // The history as it stood when this problem was first measured: a resumed run starts from the same hints.
        std::int64_t history_before = s.run_id;
        if (!o.force) {
            for (ResultRecord& r : stores.front().results(problem_results(kernel, device.key, p))) {
                history_before = std::min(history_before, r.run_id);
                pl.stored.emplace(r.config_key, std::move(r.measurement));
            }
        }
        pl.strategy->begin(p, std::move(valid));
        pl.transfer = o.transfer && !pl.split;
        if (pl.transfer) {
            if (!history) history = stored_history(stores.front(), space, kernel, device.key);
            pl.history = history_winners(*history, p, problems, history_before);
            pl.history_before = history_before;
            for (const TunedProblem& t : pl.history) history_problems.insert(t.problem.key());
        }
        std::vector<Config> batch = pl.transfer ? std::vector<Config>{} : pl.strategy->propose();
        for (const Config& c : batch)
            if (!pl.stored.contains(c.key())) measurers.front()->prefetch(c, p.dtype);
        // With problems enough to go round, each GPU takes whole problems, so each problem is set up (buffers, inputs,
        // the reference) on one GPU only. Fewer problems are split, a few parts per GPU, so that GPUs that finish early
        // take more of them. (On two H200s this did not change the 1.25-1.31x over one GPU: docs/design.md, Scale.)
        if (pl.split && lanes > 1 && !batch.empty() && problems.size() < kWholeProblemsPerGpu * lanes) {
            const std::size_t n = std::min(batch.size(), 2 * lanes);
            for (std::size_t i = 0; i < n; ++i) pl.parts.emplace_back();
            for (std::size_t j = 0; j < batch.size(); ++j) pl.parts[j * n / batch.size()].push_back(batch[j]);
        } else if (!batch.empty() || pl.transfer) {
            pl.parts.push_back(std::move(batch));
        }
        total += pl.expected;
        planned.push_back(std::move(pl));
    }
    progress.update([&](ProgressEvent& ev) {
        ev.total += total;
        for (GpuWorker* g : group.gpus) progress.gpu(ev, g->ordinal());
    });

    if (triaged > 0)
        progress.notice(fmt::format(
            "triage: the database's earlier runs expect kernel {} {:.0f} % or more slower than another kernel of the "
            "space at {} of these problems: its search measures {} configurations there, the others take the rest "
            "(--no-transfer: none)",
            space.alternative(), 100 * (kTriageSlowdown - 1), triaged, kTriageProbe));
    if (!history_problems.empty())
        progress.notice(fmt::format(
            "transfer: each search starts from the winners of the most similar problems: this run's as they finish, "
            "and {} stored by earlier runs of {} on this device (--no-transfer: from scratch)",
            history_problems.size(), kernel.op));

    std::mutex mutex;  // the outcomes and the summary's counts
    std::atomic<bool> time_limit_hit = false;
    // Where every problem is measured exhaustively (no search learns from the problems before it), the costliest go
    // first: a long problem handed out last kept one GPU busy after the others had finished (softmax's M=4096,
    // N=128256 at the end of its space). Cost: the configurations times the bytes a measurement moves, at least a
    // launch's worth (~5 us at 3 TB/s).
    std::vector<std::size_t> order;
    if (lanes > 1 && std::all_of(planned.begin(), planned.end(), [](const Planned& pl) { return pl.split; })) {
        std::vector<double> cost;
        for (const Planned& pl : planned)
            cost.push_back(double(pl.expected) * std::max(op.bytes_moved(pl.problem), 1.5e7));
        for (std::size_t i = 0; i < planned.size(); ++i) order.push_back(i);
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return cost[a] > cost[b]; });
    }
    WorkQueue queue(
        [&] {
            std::vector<std::size_t> parts;
            for (const Planned& pl : planned) parts.push_back(pl.split ? pl.parts.size() : (pl.parts.empty() ? 0 : 1));
            return parts;
        }(),
        order);
    // Called in a handler, which throws the error itself when this does not turn it into LaneLost.
    auto lane_error = [&](std::size_t lane, const Error& e) {
        // A GPU that fails (its worker lost and not restarted) is dropped while others go on; alone, the error stands.
        if (lanes > 1 && (e.category() == ErrorCategory::device || e.category() == ErrorCategory::no_gpu))
            throw LaneLost{fmt::format("GPU {}: {}", group.gpus[lane]->ordinal(), e.message())};
    };
    auto measure_configs = [&](std::size_t lane, Planned& pl, const std::vector<Config>& configs) {
        const Problem& p = pl.problem;
        const int ordinal = group.gpus[lane]->ordinal();
        for (const Config& c : configs) {
            if (const auto stored = pl.stored.find(c.key()); stored != pl.stored.end()) {
                if (!pl.split) pl.strategy->observe(c, stored->second);
                {
                    std::lock_guard lock(mutex);
                    ++pl.outcome.proposed;
                    ++pl.outcome.skipped;
                }
                progress.update([&](ProgressEvent& ev) {
                    ++ev.skipped;
                    ++ev.done;
                    ev.problem = p.key();
                    ev.config = c.key();
                });
                continue;
            }
            if (time_limit_hit || (o.time_limit_s && seconds_since(t0) > *o.time_limit_s)) {
                time_limit_hit = true;
                queue.stop();
                return;
            }
            ResultRecord rec{kernel, c.key(), p, device.key, s.run_id, utc_now_iso(), {}};
            try {
                rec.measurement = measurers[lane]->measure(c, p, o.timing, o.timeout_floor_s);
            } catch (const Error& e) {
                lane_error(lane, e);
                throw;
            } catch (const WorkerLost& l) {  // the worker died again while being restarted
                lane_error(lane, Error(ErrorCategory::device, "its worker cannot be restarted: " + l.message));
                throw Error(ErrorCategory::device, "the GPU's worker cannot be restarted: " + l.message);
            }
            const Measurement& m = rec.measurement;
            stores[lane].record(rec, o.force);
            if (!pl.split) pl.strategy->observe(c, m);
            {
                std::lock_guard lock(mutex);
                ++pl.outcome.proposed;
                ++pl.outcome.measured;
                ++s.status_counts[std::string(status_name(m.status))];
                if (m.status != Status::ok) ++pl.outcome.failed;
            }
            progress.update([&](ProgressEvent& ev) {
                ++ev.measured;
                ++ev.done;
                if (m.status != Status::ok) ++ev.failed;
                ++progress.gpu(ev, ordinal).measured;
                ev.problem = p.key();
                ev.config = c.key();
                // A search chosen for a large space says so, with its budget, on the progress line.
                ev.phase = pl.plan.automatic ? fmt::format("measure [{} {} of {}]", pl.plan.name, pl.expected,
                                                           pl.outcome.valid_configs)
                                             : "measure";
            });
        }
    };
    auto run_task = [&](std::size_t lane, const WorkTask& task) {
        Planned& pl = planned[task.problem];
        if (task.finish) {
            std::int64_t measured = 0;
            {
                std::lock_guard lock(mutex);
                measured = pl.outcome.measured;
            }
            // Its best, once confirmed, is where a later problem's search starts.
            auto hand_on_best = [&] {
                if (!o.transfer) return;
                ProblemResults results = stored_results(stores[lane], space, kernel, device.key, pl.problem);
                std::vector<double> slowdown;
                std::vector<Config> fastest = fastest_of(results, &slowdown);
                if (fastest.empty()) return;
                std::lock_guard lock(mutex);
                tuned.push_back({pl.problem, std::move(fastest), false, std::move(slowdown)});
                insert_in_key_order(tuned_results, std::move(results));
            };
            if (measured == 0 || time_limit_hit) return hand_on_best();
            // Whatever the strategy, the leaders are measured again.
            progress.update([&](ProgressEvent& ev) {
                ev.phase = "confirm";
                ev.problem = pl.problem.key();
            });
            int confirmed = 0;
            try {
                confirmed =
                    confirm_leaders(space, pl.problem, kernel, device.key, s.run_id, o, *measurers[lane], stores[lane]);
            } catch (const Error& e) {
                lane_error(lane, e);
                throw;
            } catch (const WorkerLost& l) {
                lane_error(lane, Error(ErrorCategory::device, "its worker cannot be restarted: " + l.message));
                throw Error(ErrorCategory::device, "the GPU's worker cannot be restarted: " + l.message);
            }
            {
                std::lock_guard lock(mutex);
                s.confirmations += confirmed;
            }
            hand_on_best();
            return;
        }
        if (pl.split) {
            measure_configs(lane, pl, pl.parts[task.part]);
            return;
        }
        std::vector<Config> batch = pl.parts.front();
        if (pl.transfer) {
            std::vector<TunedProblem> before;
            // What the search learns from: the earlier runs' results of the other problems, then this run's finished
            // problems' (the history leaves this run's problems out, so none comes twice); gathered only for a
            // strategy that uses them.
            const bool learns = pl.strategy->learns_from_others();
            std::vector<ProblemResults> learned =
                history && learns ? history_results(*history, pl.problem, problems, pl.history_before)
                                  : std::vector<ProblemResults>{};
            {
                std::lock_guard lock(mutex);
                before = tuned;
                if (learns) learned.insert(learned.end(), tuned_results.begin(), tuned_results.end());
            }
            before.insert(before.end(), pl.history.begin(), pl.history.end());
            const auto is_candidate = [&](const Config& c) {
                return is_selected_config(space, c, pl.problem, o.config_filters);
            };
            std::size_t stored_hints = 0;
            const std::vector<Config> hints = transfer_hints(
                pl.problem, before, is_candidate,
                transfer_hint_limit(std::size_t(pl.outcome.valid_configs), pl.plan.budget), &stored_hints);
            {
                std::lock_guard lock(mutex);
                pl.outcome.hints = std::int64_t(hints.size());
                pl.outcome.stored_hints = std::int64_t(stored_hints);
            }
            pl.strategy->start_with(hints);
            const SearchStrategy::Learned from = pl.strategy->learn_from(learned);
            {
                std::lock_guard lock(mutex);
                pl.outcome.learned_searches = from.problems > 0;
                pl.outcome.learned_problems = from.problems;
                pl.outcome.learned_results = from.results;
            }
            batch = pl.strategy->propose();
            for (const Config& c : batch)
                if (!pl.stored.contains(c.key())) measurers[lane]->prefetch(c, pl.problem.dtype);
        }
        while (!batch.empty() && !time_limit_hit) {
            measure_configs(lane, pl, batch);
            if (time_limit_hit) return;
            // Adaptive strategies propose more after seeing results; the next batch compiles meanwhile.
            batch = pl.strategy->propose();
            for (const Config& c : batch)
                if (!pl.stored.contains(c.key())) measurers[lane]->prefetch(c, pl.problem.dtype);
        }
        std::lock_guard lock(mutex);
        const std::int64_t unproposed = pl.expected - pl.outcome.proposed;  // a strategy may stop before its budget
        progress.update([&](ProgressEvent& ev) { ev.total -= unproposed; });
    };
    run_lanes(lanes, queue, run_task, [&](std::size_t lane, const std::string& reason) {
        {
            std::lock_guard lock(mutex);
            s.dropped_gpus.push_back(reason);
        }
        progress.notice(
            fmt::format("GPU {} dropped, the run goes on without it: {}", group.gpus[lane]->ordinal(), reason));
        progress.update([&](ProgressEvent& ev) { progress.gpu(ev, group.gpus[lane]->ordinal()).dropped = true; });
    });
    s.time_limit_hit = time_limit_hit;

    const auto best = stores.front().best(kernel.op, kernel.variant, device.key, {kernel.source_hash});
    for (Planned& pl : planned) {
        for (const ResultRecord& r : best)
            if (r.problem.key() == pl.problem.key()) pl.outcome.best = r;
        s.problems.push_back(std::move(pl.outcome));
    }
    stores.front().finish_run(s.run_id, s.time_limit_hit ? "time_limit" : "finished");
    for (GpuWorker* g : group.gpus) s.worker_restarts += g->restarts();
    s.elapsed_s = seconds_since(t0);
    return s;
}

// Tunes one kernel of the space file (all of it, for a file of one kernel): one summary per device tuned.
std::vector<TuneSummary> tune_space(const SearchSpace& space, const TuneOptions& options, RunProgress& progress) {
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
        if (!o.shapes.empty() && o.alternatives_tuned.empty() && space.valid_configs(p).empty())
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
    std::string no_gpu_reason;
    std::vector<std::unique_ptr<GpuWorker>> gpus;
    if (!o.compile_only) gpus = start_gpus(o, jit, no_gpu_reason, progress);
    if (gpus.empty()) {
        TuneSummary s;
        s.no_gpu_reason = no_gpu_reason;
        return {compile_only_sweep(space, problems, o, jit, std::move(s), progress)};
    }
    for (const auto& gpu : gpus)
        if (o.timing.cold_l2 && o.timing.clean_flush &&
            gpu->device().cc_major < 8)  // no discard.global.L2 before sm_80
            throw Error(ErrorCategory::bad_input,
                        fmt::format("the clean flush needs sm_80 or newer and GPU {} is {}: use --flush dirty",
                                    gpu->ordinal(), gpu->device().arch()),
                        "--flush");
    Store store = Store::open(o.db_path);
    const std::vector<DeviceGroup> groups = calibrate(gpus, store, progress);
    // Devices that differ are tuned side by side, each on its own GPUs, each over the whole space.
    std::vector<std::future<TuneSummary>> runs;
    for (const DeviceGroup& g : groups)
        runs.push_back(std::async(std::launch::async,
                                  [&, g = &g] { return tune_device(space, op, problems, o, jit, *g, progress, t0); }));
    std::vector<TuneSummary> out;
    std::exception_ptr failure;
    for (auto& r : runs) {
        try {
            out.push_back(r.get());
        } catch (...) {
            if (!failure) failure = std::current_exception();
        }
    }
    if (failure) std::rethrow_exception(failure);
    return out;
}

// One summary of several kernels' tunings: counts add up, and each problem's best is the best of every kernel's.
void merge_summary(TuneSummary& into, TuneSummary&& s) {
    for (const auto& [status, n] : s.status_counts) into.status_counts[status] += n;
    into.compiled += s.compiled;
    into.compile_failed += s.compile_failed;
    into.compile_cache_hits += s.compile_cache_hits;
    into.compile_errors.insert(into.compile_errors.end(), s.compile_errors.begin(), s.compile_errors.end());
    into.worker_restarts += s.worker_restarts;
    into.dropped_gpus.insert(into.dropped_gpus.end(), s.dropped_gpus.begin(), s.dropped_gpus.end());
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
        same->hints += p.hints;
        same->stored_hints += p.stored_hints;
        same->learned_searches += p.learned_searches;
        same->learned_problems += p.learned_problems;
        same->learned_results += p.learned_results;
        same->triage.insert(same->triage.end(), p.triage.begin(), p.triage.end());
        if (p.best && (!same->best || best_rank(p.best->measurement) < best_rank(same->best->measurement)))
            same->best = std::move(p.best);
    }
}

}  // namespace

std::vector<TuneSummary> run_tuning(const TuneOptions& o, const ProgressCallback& progress) {
    const auto t0 = Clock::now();
    std::vector<SearchSpace> kernels = load_space_file(o.space_path);
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
    if (kernels.size() > 1 && !o.shapes.empty())  // a shape is refused when no kernel can take it, before any work
        for (const Problem& p : select_problems(kernels.front(), o))
            if (std::none_of(kernels.begin(), kernels.end(),
                             [&](const SearchSpace& k) { return k.count_valid_configs(p) > 0; }))
                throw Error(ErrorCategory::bad_input,
                            fmt::format("no configuration of {} is valid at {} (the constraints and prune rules of "
                                        "every kernel)",
                                        o.space_path, p.key()),
                            "--shape");
    RunProgress run_progress(progress, t0);
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
                run_progress.notice(
                    fmt::format("kernel {}: no valid configuration at these problems, skipped", k.alternative()));
                return true;
            });
    }
    std::vector<TuneSummary> out;  // one per device, in the order the first kernel's tuning gave them
    std::vector<const SearchSpace*> alternatives_tuned;
    if (kernels.size() > 1)
        for (const SearchSpace& k : kernels) alternatives_tuned.push_back(&k);
    std::int64_t first_run = 0;
    for (const SearchSpace& k : kernels) {
        if (!k.alternative().empty())
            run_progress.notice(fmt::format("kernel {} ({})", k.alternative(), k.kernel_name_template()));
        TuneOptions rest = o;  // --time bounds the whole run, every kernel together
        if (o.time_limit_s) rest.time_limit_s = std::max(0.0, *o.time_limit_s - seconds_since(t0));
        rest.alternatives_tuned = alternatives_tuned;
        rest.triage_before_run = first_run;
        bool time_limit_hit = false;
        for (TuneSummary& d : tune_space(k, rest, run_progress)) {
            if (d.run_id > 0 && (first_run == 0 || d.run_id < first_run)) first_run = d.run_id;
            time_limit_hit = time_limit_hit || d.time_limit_hit;
            auto same = std::find_if(out.begin(), out.end(), [&](const TuneSummary& t) {
                return t.device.has_value() == d.device.has_value() && (!d.device || t.device->key == d.device->key);
            });
            if (same == out.end()) {
                out.push_back(std::move(d));
            } else {
                merge_summary(*same, std::move(d));
            }
        }
        if (time_limit_hit) break;
    }
    for (TuneSummary& s : out) s.elapsed_s = seconds_since(t0);
    return out;
}

}  // namespace ktune
