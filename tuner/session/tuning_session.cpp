#include "tuner/session/tuning_session.hpp"

#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/stats/stats.hpp"
#include "kernels/op.hpp"
#include "tuner/core/error.hpp"
#include "tuner/jit/compile_service.hpp"
#include "tuner/session/environment.hpp"
#include "tuner/session/gpu_worker.hpp"
#include "tuner/space/search_space.hpp"
#include "tuner/strategy/strategy.hpp"

namespace ktune {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string wire_elem(ElemType t) {
    switch (t) {
        case ElemType::f32: return "f32";
        case ElemType::f16: return "f16";
        case ElemType::bf16: return "bf16";
        case ElemType::i32: return "i32";
        case ElemType::i64: return "i64";
        case ElemType::i8: return "i8";
        case ElemType::u8: return "u8";
    }
    return "?";
}

std::string wire_role(BufferRole r) {
    switch (r) {
        case BufferRole::input: return "input";
        case BufferRole::output: return "output";
        case BufferRole::inout: return "inout";
        case BufferRole::scratch: return "scratch";
    }
    return "?";
}

bool matches(const Problem& p, const NamedValues& filter) {
    for (const auto& [name, value] : filter) {
        const auto v = lookup(p.shape, name);
        if (!v || *v != value) return false;
    }
    return true;
}

std::vector<Problem> select_problems(const SearchSpace& space, const TuneOptions& o) {
    std::vector<Problem> out;
    for (const Problem& p : space.problems()) {
        if (!o.dtypes.empty() && std::find(o.dtypes.begin(), o.dtypes.end(), p.dtype) == o.dtypes.end()) continue;
        if (!o.problem_filters.empty() &&
            std::none_of(o.problem_filters.begin(), o.problem_filters.end(),
                         [&](const NamedValues& f) { return matches(p, f); }))
            continue;
        out.push_back(p);
    }
    if (out.empty())
        throw Error(ErrorCategory::bad_input,
                    fmt::format("no problem of {} matches the --dtype/--problem filters", space.file()), "--problem");
    return out;
}

// Keeps the first lines of a compile log: the error is at the top, the rest is the instantiation backtrace.
std::string first_lines(const std::string& log, int lines) {
    std::size_t pos = 0;
    for (int i = 0; i < lines && pos != std::string::npos; ++i) {
        pos = log.find('\n', pos);
        if (pos != std::string::npos) ++pos;
    }
    return pos == std::string::npos ? log : log.substr(0, pos);
}

wire::Launch to_wire(const LaunchGeometry& g) {
    wire::Launch l;
    for (int i = 0; i < 3; ++i) {
        l.grid[i] = g.grid[i];
        l.block[i] = g.block[i];
    }
    l.shared_bytes = g.shared_bytes;
    return l;
}

// Compilations shared by every problem of one element type, keyed by name expression.
class CompilePlan {
public:
    CompilePlan(CompileService& jit, std::string arch) : m_jit(jit), m_arch(std::move(arch)) {}
    std::shared_future<CompileResult> get(const std::string& source, const std::string& name_expression) {
        auto [it, inserted] = m_futures.try_emplace(source + "|" + name_expression);
        if (inserted) {
            CompileRequest req;
            req.source_path = source;
            req.name_expressions = {name_expression};
            req.arch = m_arch;
            it->second = m_jit.submit(std::move(req));
        }
        return it->second;
    }
    std::size_t size() const { return m_futures.size(); }

private:
    CompileService& m_jit;
    std::string m_arch;
    std::map<std::string, std::shared_future<CompileResult>> m_futures;
};

ProblemSetup make_setup(const OpDescription& op, const Problem& p, const TuneOptions& o) {
    ProblemSetup s;
    for (const BufferSpec& b : op.buffers(p))
        s.buffers.push_back(wire::Buffer{b.name, wire_elem(b.type), b.elements, wire_role(b.role), b.lo, b.hi,
                                         buffer_seed(o.seed, b.name)});
    for (const KernelArg& a : op.arguments(p)) {
        wire::Arg w;
        w.buffer = a.buffer;
        w.integer = a.integer;
        w.real = a.real;
        switch (a.kind) {
            case KernelArg::Kind::buffer: w.kind = "buffer"; break;
            case KernelArg::Kind::i32: w.kind = "i32"; break;
            case KernelArg::Kind::i64: w.kind = "i64"; break;
            case KernelArg::Kind::f32: w.kind = "f32"; break;
        }
        s.args.push_back(w);
    }
    return s;
}

TuneSummary compile_only_sweep(const SearchSpace& space, const std::vector<Problem>& problems, CompileService& jit,
                               std::string arch, TuneSummary s, const ProgressCallback& progress) {
    const auto t0 = Clock::now();
    s.compile_only = true;
    s.arch = arch;
    CompilePlan plan(jit, arch);
    std::vector<std::pair<std::string, std::shared_future<CompileResult>>> jobs;
    std::set<std::string> seen;
    for (const Problem& p : problems) {
        ProblemOutcome outcome;
        outcome.problem = p;
        const auto valid = space.valid_configs(p);
        outcome.valid_configs = std::int64_t(valid.size());
        s.problems.push_back(outcome);
        auto add = [&](const std::string& source, const std::string& name) {
            if (seen.insert(source + "|" + name).second) jobs.emplace_back(name, plan.get(source, name));
        };
        add(space.reference_source(), space.reference_name(p.dtype));
        for (const Config& c : valid) add(space.kernel_source(), space.kernel_name(c, p.dtype));
    }
    ProgressEvent ev;
    ev.phase = "compile";
    ev.total = std::int64_t(jobs.size());
    if (progress && !s.no_gpu_reason.empty()) {
        ev.notice = fmt::format("{}\nSo this is a compile-only sweep for {}: every valid configuration is compiled, "
                                "nothing is timed.", s.no_gpu_reason, arch);
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

}  // namespace

NamedValues parse_problem_filter(const std::string& text, const std::string& where) {
    NamedValues out;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = text.find(',', start);
        const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        const std::size_t eq = item.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
            throw Error(ErrorCategory::bad_input,
                        fmt::format("'{}' is not AXIS=VALUE (write e.g. M=4096,H=8192)", item), where);
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

TuneSummary run_tuning(const TuneOptions& o, const ProgressCallback& progress) {
    const auto t0 = Clock::now();
    const SearchSpace space = SearchSpace::load_file(o.space_path);
    const OpDescription& op = find_op(space.op(), space.variant());
    const std::vector<Problem> problems = select_problems(space, o);
    for (const Problem& p : problems) op.buffers(p);  // a shape the op cannot take fails now, before any work
    auto strategy_check = make_strategy(o.strategy, {o.budget, o.seed});  // bad --strategy/--budget fail now too

    CompileService jit({o.root, o.cache_dir, "", o.threads});
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
    if (!gpu) return compile_only_sweep(space, problems, jit, o.arch.value_or("sm_90"), std::move(s), progress);

    Store store = Store::open(o.db_path);
    DeviceInfo device = gpu->device();
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
    run.environment_json = nlohmann::json{{"hostname", hostname()},
                                          {"ktune", ktune_version()},
                                          {"cuda_toolkit", cuda_toolkit_version()},
                                          {"nvrtc", CompileService::nvrtc_version()},
                                          {"driver", device.driver_version},
                                          {"device", gpu->props()},
                                          {"space", o.space_path},
                                          {"strategy", o.strategy},
                                          {"seed", o.seed},
                                          {"timing", o.timing}}
                               .dump();
    s.run_id = store.begin_run(run);

    const KernelInfo kernel{space.op(), space.variant(), space.kernel_source(), jit.source_hash(space.kernel_source())};
    CompilePlan plan(jit, device.arch());

    // Plan every problem first, so compilation of all of it overlaps the measurements.
    struct Planned {
        Problem problem;
        std::unique_ptr<SearchStrategy> strategy;
        std::vector<Config> batch;
        std::vector<bool> done_before;
        ProblemOutcome outcome;
    };
    std::vector<Planned> planned;
    std::int64_t total = 0;
    for (const Problem& p : problems) {
        Planned pl{p, make_strategy(o.strategy, {o.budget, o.seed}), {}, {}, {}};
        pl.outcome.problem = p;
        std::vector<Config> valid = space.valid_configs(p);
        pl.outcome.valid_configs = std::int64_t(valid.size());
        pl.strategy->begin(p, std::move(valid));
        pl.batch = pl.strategy->propose();
        for (const Config& c : pl.batch) {
            const bool done = !o.force && store.has_result(kernel.source_hash, c.key(), p.key(), device.key);
            pl.done_before.push_back(done);
            if (!done) plan.get(space.kernel_source(), space.kernel_name(c, p.dtype));
        }
        total += std::int64_t(pl.batch.size());
        planned.push_back(std::move(pl));
    }

    ProgressEvent ev;
    ev.phase = "measure";
    ev.total = total;
    double best_p50_us = 0;
    for (Planned& pl : planned) {
        const Problem& p = pl.problem;
        ev.problem = p.key();
        bool set_up = false;
        while (!pl.batch.empty()) {
            for (std::size_t i = 0; i < pl.batch.size(); ++i) {
                const Config& c = pl.batch[i];
                ++pl.outcome.proposed;
                ev.config = c.key();
                if (i < pl.done_before.size() && pl.done_before[i]) {
                    ++pl.outcome.skipped;
                    ++ev.skipped;
                    ++ev.done;
                    pl.strategy->observe(c, Measurement{});
                    if (progress) progress(ev);
                    continue;
                }
                if (o.time_limit_s && seconds_since(t0) > *o.time_limit_s) {
                    s.time_limit_hit = true;
                    break;
                }
                if (!set_up) {
                    ProblemSetup setup = make_setup(op, p, o);
                    const CompileResult& ref = plan.get(space.reference_source(), space.reference_name(p.dtype)).get();
                    if (!ref.ok)
                        throw Error(ErrorCategory::compile,
                                    "the reference kernel does not compile:\n" + first_lines(ref.log, 20),
                                    space.reference_source());
                    setup.reference = to_wire(space.reference_launch(p));
                    setup.reference.cubin = ref.cubin_path;
                    setup.reference.lowered = ref.kernels.at(0).lowered_name;
                    gpu->setup(setup);
                    set_up = true;
                    best_p50_us = 0;
                }
                ResultRecord rec{kernel, c.key(), p, device.key, s.run_id, utc_now_iso(), Measurement{}};
                Measurement& m = rec.measurement;
                const CompileResult& cr = plan.get(space.kernel_source(), space.kernel_name(c, p.dtype)).get();
                if (!cr.ok) {
                    m.status = Status::compile_error;
                    m.message = cr.log;
                } else {
                    m.compile = cr.kernels.at(0).info;
                    m.compile.compile_seconds = cr.compile_seconds;
                    m.compile.cache_hit = cr.cache_hit;
                    try {
                        const LaunchGeometry g = space.launch(c, p);
                        wire::Launch launch = to_wire(g);
                        launch.cubin = cr.cubin_path;
                        launch.lowered = cr.kernels.at(0).lowered_name;
                        m.dynamic_shared_bytes = g.shared_bytes;
                        if (int(g.shared_bytes) > gpu->props().max_shared_per_block_optin) {
                            m.status = Status::launch_error;
                            m.message = fmt::format("needs {} bytes of dynamic shared memory; the device allows {}",
                                                    g.shared_bytes, gpu->props().max_shared_per_block_optin);
                        } else {
                            // Watchdog: a hung kernel is killed after the sampling cap plus a margin that grows with
                            // the best time seen on this problem, never below the floor.
                            const double timeout = o.timing.time_cap_s + std::max(o.timeout_floor_s,
                                                                                  2000 * best_p50_us * 1e-6);
                            const wire::EvaluateResult er =
                                gpu->evaluate(launch, space.tolerance(p.dtype), o.timing, timeout);
                            m.status = parse_status(er.status).value_or(Status::launch_error);
                            m.message = er.message;
                            m.mismatches = er.mismatches;
                            m.max_abs_error = er.max_abs_error;
                            m.samples_us = er.samples_us;
                            m.time_cap_hit = er.time_cap_hit;
                            m.cupti_p50_us = er.cupti_p50_us;
                            m.stats = summarize(er.samples_us);
                            if (m.status == Status::ok && m.stats.p50 > 0) {
                                m.gbps = op.bytes_moved(p) / (m.stats.p50 * 1e-6) / 1e9;
                                if (best_p50_us == 0 || m.stats.p50 < best_p50_us) best_p50_us = m.stats.p50;
                            }
                        }
                    } catch (const Error& e) {
                        if (e.category() != ErrorCategory::bad_input) throw;
                        m.status = Status::launch_error;
                        m.message = e.what();
                    }
                }
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
            // Adaptive strategies may propose more after seeing results; their proposals are compiled on demand.
            pl.batch = pl.strategy->propose();
            pl.done_before.clear();
            for (const Config& c : pl.batch)
                pl.done_before.push_back(!o.force &&
                                         store.has_result(kernel.source_hash, c.key(), p.key(), device.key));
            ev.total += std::int64_t(pl.batch.size());
        }
        if (s.time_limit_hit) break;
    }

    const auto best = store.best(kernel.op, kernel.variant, device.key, kernel.source_hash);
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

}  // namespace ktune
