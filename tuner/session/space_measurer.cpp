#include "tuner/session/space_measurer.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/stats.hpp"

namespace ktune {
namespace {}  // namespace

std::string first_lines(const std::string& log, int lines) {
    std::size_t pos = 0;
    for (int i = 0; i < lines && pos != std::string::npos; ++i) {
        pos = log.find('\n', pos);
        if (pos != std::string::npos) ++pos;
    }
    return pos == std::string::npos ? log : log.substr(0, pos);
}

KernelInfo kernel_identity(const SearchSpace& space, const CompileService& jit, const wire::TimingOptions& timing) {
    // A library baseline has no source to hash: its name stands for it (the library's version is in the run's
    // environment, not in the identity).
    const std::string source = space.is_library() ? space.kernel_source() : jit.source_hash(space.kernel_source());
    const std::string rank =
        timing.cupti_samples > 0 ? fmt::format("kernel-time-under-{}us", kKernelTimeRankingUs) : std::string("event");
    // Defines join the identity only where a space has them, so that the stored tunings of templates keep theirs.
    const std::string defines =
        space.defines().empty() ? "" : fmt::format("\ndefines={}", fmt::join(space.defines(), ","));
    const std::string target = space.arch_specific() ? "\narch_specific" : "";  // another binary, same source
    const std::string hash =
        hash_hex(source + "\n" + space.kernel_name_template() + defines + target + "\nl2=" + wire::l2_state(timing) +
                 "\nlaunch=" + space.launch_text() + "\nrank=" + rank)
            .substr(0, 16);
    return KernelInfo{space.op(), space.variant(),        space.kernel_source(),
                      hash,       wire::l2_state(timing), space.alternative()};
}

RankTimer rank_timer(double bytes_moved, const wire::DeviceProps& d, const wire::TimingOptions& t) {
    const double nominal_bytes_per_s = 2.0 * double(d.memory_clock_khz) * 1e3 * double(d.memory_bus_bits) / 8.0;
    if (t.cupti_samples <= 0 || nominal_bytes_per_s <= 0) return RankTimer::event;
    return bytes_moved / nominal_bytes_per_s * 1e6 < kKernelTimeRankingUs ? RankTimer::kernel : RankTimer::event;
}

ProblemSetup make_problem_setup(const OpDescription& op, const Problem& p, std::uint64_t seed) {
    ProblemSetup s;
    const std::vector<BufferSpec> buffers = op.buffers(p);
    for (const BufferSpec& b : buffers) {
        wire::Buffer w;
        w.name = b.name;
        w.elem = elem_wire_name(b.type);
        w.elements = b.elements;
        w.role = buffer_role_name(b.role);
        w.lo = b.lo;
        w.hi = b.hi;
        w.seed = buffer_seed(seed, b.name);
        if (b.pad) {
            const auto lengths = std::find_if(buffers.begin(), buffers.end(),
                                              [&](const BufferSpec& x) { return x.name == b.pad->lengths; });
            if (lengths == buffers.end())
                throw Error(ErrorCategory::internal,
                            fmt::format("buffer {} is padded by the lengths in {}, which the op does not have", b.name,
                                        b.pad->lengths),
                            p.key());
            w.pad_lengths = static_cast<int>(lengths - buffers.begin());
            w.pad_heads = b.pad->heads;
            w.pad_tokens = b.pad->tokens;
            w.pad_token_elements = b.pad->token_elements;
        }
        s.buffers.push_back(std::move(w));
    }
    for (const KernelArg& a : op.arguments(p)) {
        wire::Arg w;
        w.kind = arg_kind_name(a.kind);
        w.buffer = a.buffer;
        w.integer = a.integer;
        w.real = a.real;
        s.args.push_back(std::move(w));
    }
    return s;
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

std::string compile_key(const std::string& source, const std::string& name, const std::vector<std::string>& options,
                        const std::string& arch) {
    std::string key = source + "|" + name;
    for (const std::string& o : options) key += "|" + o;
    if (!arch.empty()) key += "|arch=" + arch;
    return key;
}

std::shared_future<CompileResult> SharedCompiles::submit(const std::string& source, const std::string& name,
                                                         const std::vector<std::string>& options,
                                                         const std::string& target_arch) {
    const std::string& arch = target_arch.empty() ? m_arch : target_arch;
    std::lock_guard lock(m_mutex);
    auto [it, inserted] = m_compiles.try_emplace(compile_key(source, name, options, arch));
    if (inserted) {
        CompileRequest req;
        req.source_path = source;
        req.name_expressions = {name};
        req.arch = arch;
        req.extra_options = options;
        it->second = m_jit.submit(std::move(req));
    }
    return it->second;
}

SpaceMeasurer::SpaceMeasurer(const SearchSpace& space, const OpDescription& op, CompileService& jit, GpuWorker& gpu,
                             std::uint64_t seed)
    : m_space(space),
      m_op(op),
      m_own_compiles(std::make_unique<SharedCompiles>(jit, gpu.device().arch())),
      m_compiles(*m_own_compiles),
      m_gpu(gpu),
      m_seed(seed) {}

SpaceMeasurer::SpaceMeasurer(const SearchSpace& space, const OpDescription& op, SharedCompiles& compiles,
                             GpuWorker& gpu, std::uint64_t seed)
    : m_space(space), m_op(op), m_compiles(compiles), m_gpu(gpu), m_seed(seed) {}

const CompileResult& SpaceMeasurer::compiled(const std::string& source, const std::string& name,
                                             const std::vector<std::string>& options, const std::string& target_arch) {
    auto [it, inserted] = m_waited.try_emplace(compile_key(source, name, options, target_arch));
    if (inserted) it->second = m_compiles.submit(source, name, options, target_arch);
    return it->second.get();
}

void SpaceMeasurer::prefetch(const Config& c, Dtype d) {
    if (m_space.is_library()) return;  // nothing to compile
    m_compiles.submit(m_space.kernel_source(), m_space.kernel_name(c, d), m_space.compile_options(c),
                      m_space.target_arch(m_compiles.arch()));
}

void SpaceMeasurer::set_up(const Problem& p) {
    if (m_current_problem == p.key()) return;
    ProblemSetup setup = make_problem_setup(m_op, p, m_seed);
    const CompileResult& ref =
        compiled(m_space.reference_source(), m_space.reference_name(p.dtype), m_space.reference_compile_options());
    if (!ref.ok)
        throw Error(ErrorCategory::compile, "the reference kernel does not compile:\n" + first_lines(ref.log, 20),
                    m_space.reference_source());
    setup.reference = to_wire(m_space.reference_launch(p));
    setup.reference.cubin = ref.cubin_path;
    setup.reference.lowered = ref.kernels.at(0).lowered_name;
    m_gpu.setup(setup);
    m_current_problem = p.key();
    m_best_p50_us = 0;
}

Measurement SpaceMeasurer::measure(const Config& c, const Problem& p, const wire::TimingOptions& timing,
                                   double timeout_floor_s) {
    set_up(p);
    Measurement m;
    wire::Launch launch;
    LaunchGeometry g;
    if (m_space.is_library()) {
        launch.library = m_space.library();
        launch.config = c.values;
    } else {
        const CompileResult& cr = compiled(m_space.kernel_source(), m_space.kernel_name(c, p.dtype),
                                           m_space.compile_options(c), m_space.target_arch(m_compiles.arch()));
        if (!cr.ok) {
            m.status = Status::compile_error;
            m.message = cr.log;
            return m;
        }
        m.compile = cr.kernels.at(0).info;
        m.compile.compile_seconds = cr.compile_seconds;
        m.compile.cache_hit = cr.cache_hit;
        launch.cubin = cr.cubin_path;
        launch.lowered = cr.kernels.at(0).lowered_name;
    }
    try {
        if (!m_space.is_library()) {
            g = m_space.launch(c, p, m_gpu.device().sm_count);
            wire::Launch geometry = to_wire(g);
            launch.grid = geometry.grid;
            launch.block = geometry.block;
            launch.shared_bytes = geometry.shared_bytes;
            for (TensorMapValue& v : m_space.tensor_map_values(c, p)) {
                wire::Arg map;
                map.kind = "tensor_map";
                map.buffer = std::move(v.buffer);
                map.dims = std::move(v.shape);
                map.box = std::move(v.box);
                map.swizzle = v.swizzle;
                launch.tensor_maps.push_back(std::move(map));
            }
        }
        m.dynamic_shared_bytes = g.shared_bytes;
        if (int(g.shared_bytes) > m_gpu.props().max_shared_per_block_optin) {
            m.status = Status::launch_error;
            m.message = fmt::format("needs {} bytes of dynamic shared memory; the device allows {}", g.shared_bytes,
                                    m_gpu.props().max_shared_per_block_optin);
            return m;
        }
        // Watchdog: a hung kernel is killed after the sampling cap plus a margin that grows with the best time seen
        // on this problem, never below the floor.
        const double timeout = timing.time_cap_s + std::max(timeout_floor_s, 2000 * m_best_p50_us * 1e-6);
        m.ranked_by = rank_timer_for(p, timing);
        wire::TimingOptions t = timing;
        if (m.ranked_by == RankTimer::kernel) t.cupti_samples = std::max(t.cupti_samples, kKernelRankedCuptiSamples);
        const wire::EvaluateResult er = m_gpu.evaluate(launch, m_space.tolerance(p.dtype), t, timeout);
        m.status = parse_status(er.status).value_or(Status::launch_error);
        m.message = er.message;
        m.mismatches = er.mismatches;
        m.max_abs_error = er.max_abs_error;
        m.samples_us = er.samples_us;
        m.time_cap_hit = er.time_cap_hit;
        m.cupti_samples_us = er.cupti_samples_us;
        derive_timings(m, p);
        if (m.status == Status::ok && m.stats.p50 > 0 && (m_best_p50_us == 0 || m.stats.p50 < m_best_p50_us))
            m_best_p50_us = m.stats.p50;
    } catch (const Error& e) {
        // A launch expression that cannot be evaluated for this configuration (division by zero, a grid of 0)
        // is this configuration's failure, not the run's.
        if (e.category() != ErrorCategory::bad_input) throw;
        m.status = Status::launch_error;
        m.message = e.what();
    }
    return m;
}

RankTimer SpaceMeasurer::rank_timer_for(const Problem& p, const wire::TimingOptions& timing) {
    return rank_timer(m_op.bytes_moved(p), m_gpu.props(), timing);
}

Measurement SpaceMeasurer::measure_pooled(const Config& c, const Problem& p, const wire::TimingOptions& timing,
                                          int rounds, double timeout_floor_s) {
    Measurement pooled = measure(c, p, timing, timeout_floor_s);
    for (int i = 1; i < rounds && pooled.status == Status::ok; ++i) {
        Measurement m = measure(c, p, timing, timeout_floor_s);
        if (m.status != Status::ok) return m;
        pooled.samples_us.insert(pooled.samples_us.end(), m.samples_us.begin(), m.samples_us.end());
        pooled.cupti_samples_us.insert(pooled.cupti_samples_us.end(), m.cupti_samples_us.begin(),
                                       m.cupti_samples_us.end());
        pooled.time_cap_hit = pooled.time_cap_hit || m.time_cap_hit;
        pooled.max_abs_error = std::max(pooled.max_abs_error, m.max_abs_error);
    }
    if (pooled.status == Status::ok) derive_timings(pooled, p);
    return pooled;
}

void SpaceMeasurer::derive_timings(Measurement& m, const Problem& p) const {
    m.stats = summarize(m.samples_us);
    if (!m.cupti_samples_us.empty()) {
        m.cupti_p50_us = summarize(m.cupti_samples_us).p50;
        m.kernel_us = trimmed_mean(m.cupti_samples_us);
    }
    if (m.status == Status::ok && m.stats.p50 > 0) m.gbps = m_op.bytes_moved(p) / (m.stats.p50 * 1e-6) / 1e9;
}

}  // namespace ktune
