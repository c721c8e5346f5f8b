#include "tuner/session/check_measurer.hpp"

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "tuner/session/op_lookup.hpp"
#include "tuner/session/tuning_session.hpp"

namespace fs = std::filesystem;

namespace ktune {
namespace {

// The baseline's L2 state and warm-up; the sample counts are set per session.
wire::TimingOptions timing_of(const BaselineMethod& m) {
    wire::TimingOptions t;
    t.cold_l2 = m.cold_l2;
    t.clean_flush = m.clean_flush;
    t.warmup = m.warmup;
    return t;
}

}  // namespace

struct GpuCaseMeasurer::Space {
    SearchSpace space;
    const OpDescription* op;
    std::unique_ptr<SpaceMeasurer> measurer;
};

GpuCaseMeasurer::GpuCaseMeasurer(std::string root, CompileService& jit, GpuWorker& gpu, const Store* store,
                                 BaselineMethod method, std::uint64_t seed)
    : m_root(std::move(root)), m_jit(jit), m_gpu(gpu), m_store(store), m_method(method), m_seed(seed) {}

GpuCaseMeasurer::~GpuCaseMeasurer() = default;

// The space's kernel the case measured: the file's only one, or its alternative of the case's name.
GpuCaseMeasurer::Space& GpuCaseMeasurer::space_for(const BaselineCase& c) {
    auto& slot = m_spaces[c.op + "/" + c.variant + "/" + c.kernel];
    if (!slot) {
        const std::string file = find_space_file(m_root, c.op, c.variant);
        std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(file);
        const auto k = std::find_if(kernels.begin(), kernels.end(),
                                    [&](const SearchSpace& s) { return s.alternative() == c.kernel; });
        if (k == kernels.end())
            throw Error(ErrorCategory::bad_input,
                        c.kernel.empty()
                            ? fmt::format("{} holds several kernels: the baseline case {} names none", file, c.id())
                            : fmt::format("{} has no kernel '{}' (baseline case {})", file, c.kernel, c.id()),
                        "baseline");
        auto s = std::make_unique<Space>(Space{std::move(*k), nullptr, nullptr});
        s->op = &op_of(s->space);
        s->measurer = std::make_unique<SpaceMeasurer>(s->space, *s->op, m_jit, m_gpu, m_seed);
        slot = std::move(s);
    }
    return *slot;
}

std::vector<double> GpuCaseMeasurer::measure(const BaselineCase& c, const std::string& config_key, int min_samples) {
    Space& s = space_for(c);
    const Config config = s.space.parse_config(config_key, "baseline configuration");
    wire::TimingOptions t = timing_of(m_method);
    t.min_samples = min_samples;
    t.max_samples = min_samples;  // a session is a fixed number of samples: sessions compare like with like
    t.time_cap_s = 60;
    const bool kernel_time = c.timer == "kernel";
    t.cupti_samples = kernel_time ? min_samples : 0;
    const Measurement m = s.measurer->measure(config, c.problem, t, 10.0);
    if (m.status != Status::ok) throw CheckCorrectnessError(m.status, first_lines(m.message, 8), c.id());
    return kernel_time ? m.cupti_samples_us : m.samples_us;
}

std::string GpuCaseMeasurer::timer_for(const BaselineCase& c) {
    // As a tuning ranks it (rank_timer): with CUPTI on, whatever the baseline's event method says.
    wire::TimingOptions t = timing_of(m_method);
    t.cupti_samples = kKernelRankedCuptiSamples;
    return space_for(c).measurer->rank_timer_for(c.problem, t) == RankTimer::kernel ? "kernel" : "events";
}

std::optional<std::string> GpuCaseMeasurer::best_config_now(const BaselineCase& c) {
    if (!m_store) return std::nullopt;
    for (const ResultRecord& r : m_store->best(c.op, c.variant, m_gpu.device().key, {*current_source_hash(c)}))
        if (r.problem.key() == c.problem.key()) return r.config_key;
    return std::nullopt;
}

std::optional<std::string> GpuCaseMeasurer::current_source_hash(const BaselineCase& c) {
    return kernel_identity(space_for(c).space, m_jit, timing_of(m_method)).source_hash;
}

}  // namespace ktune
