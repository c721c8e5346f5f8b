#pragma once
// Measures configurations of one search space on one GPU: compiles them (each distinct kernel once, on the compile
// service's pool), sets each problem up once (buffers, inputs, the reference's outputs), then validates and times a
// configuration. One owner for "measure this configuration on this problem", shared by tuning runs and checks.
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/measurement.hpp"
#include "harness/protocol/protocol.hpp"
#include "kernels/op.hpp"
#include "results/store.hpp"
#include "tuner/jit/compile_service.hpp"
#include "tuner/session/gpu_worker.hpp"
#include "tuner/space/search_space.hpp"

namespace ktune {

// The worker-side description of a problem: buffers (with their generator seeds) and kernel arguments.
ProblemSetup make_problem_setup(const OpDescription& op, const Problem& p, std::uint64_t seed);
wire::Launch to_wire(const LaunchGeometry& g);

// Which time ranks a problem's measurements (Measurement::ranked_by): the kernel time (CUPTI) where the problem is so
// small that its event time is mostly the GPU front end's, the event time otherwise. Small: the op's bytes take under
// kKernelTimeRankingUs at the device's nominal DRAM bandwidth (memory clock x bus width, a fixed property, so two
// tunings always decide alike; the measured copy ceiling moves by ~1 % between processes). Large problems stay on
// events: CUPTI's tracing slowed kernels with very large grids by 7-8 % on an H100 (docs/measuring.md).
inline constexpr double kKernelTimeRankingUs = 8.0;
RankTimer rank_timer(double bytes_moved, const wire::DeviceProps& d, const wire::TimingOptions& t);
// At least this many CUPTI samples in a kernel-ranked measurement (5 otherwise in a tuning's first pass): at ~2 us the
// samples spread over ~8 ticks of 32 ns, and the trimmed means of 32 of one configuration vary by a standard deviation
// of up to 1.3 % between measurements, the per-measurement mode included (H100, 2026-11-26).
inline constexpr int kKernelRankedCuptiSamples = 32;

// What tells one compile from another: the source, the name expression and the options (kernels taking their
// parameters as defines share one name).
std::string compile_key(const std::string& source, const std::string& name, const std::vector<std::string>& options,
                        const std::string& arch = "");

// The compiles of one architecture, shared by the measurers of every GPU that tunes it: each kernel is submitted to
// the compile service once, whichever GPU measures it first or prefetched it.
class SharedCompiles {
public:
    SharedCompiles(CompileService& jit, std::string arch) : m_jit(jit), m_arch(std::move(arch)) {}
    // Submits the compile unless it was submitted already; the result is waited for by get(). Kernels taking their
    // parameters as defines share one name: the options tell them apart.
    // target_arch: the architecture to compile for when it differs from arch() (an arch-specific kernel: sm_90a).
    std::shared_future<CompileResult> submit(const std::string& source, const std::string& name,
                                             const std::vector<std::string>& options = {},
                                             const std::string& target_arch = "");
    const std::string& arch() const { return m_arch; }

private:
    CompileService& m_jit;
    std::string m_arch;
    std::mutex m_mutex;
    std::map<std::string, std::shared_future<CompileResult>> m_compiles;  // by source|name expression|options
};

class SpaceMeasurer {
public:
    SpaceMeasurer(const SearchSpace& space, const OpDescription& op, CompileService& jit, GpuWorker& gpu,
                  std::uint64_t seed);
    // One of several GPUs of one architecture, compiling through `compiles`.
    SpaceMeasurer(const SearchSpace& space, const OpDescription& op, SharedCompiles& compiles, GpuWorker& gpu,
                  std::uint64_t seed);

    // Starts compiling a configuration now, so it is ready when measured.
    void prefetch(const Config& c, Dtype d);
    // Compiles (or waits for) the configuration, sets the problem up if it is not current, validates and times.
    // Never throws for the configuration's own failures: they are the returned status. `timeout_floor_s` is the
    // watchdog's floor; it grows with the best time seen on the current problem.
    Measurement measure(const Config& c, const Problem& p, const wire::TimingOptions& timing, double timeout_floor_s);
    // `rounds` measurements one after another, each of `timing`, their samples pooled into one (the first that is not
    // ok is returned as it is). A small kernel's time settles in one of two modes ~3 % apart for a whole measurement
    // (docs/measuring.md); pooling averages that draw as more samples in one measurement cannot.
    Measurement measure_pooled(const Config& c, const Problem& p, const wire::TimingOptions& timing, int rounds,
                               double timeout_floor_s);
    // The timer (rank_timer) that ranks this problem's measurements under these options.
    RankTimer rank_timer_for(const Problem& p, const wire::TimingOptions& timing);

private:
    const CompileResult& compiled(const std::string& source, const std::string& name,
                                  const std::vector<std::string>& options, const std::string& target_arch = "");
    // The statistics, CUPTI p50, kernel time and bandwidth of a measurement, from its raw samples.
    void derive_timings(Measurement& m, const Problem& p) const;
    void set_up(const Problem& p);

    const SearchSpace& m_space;
    const OpDescription& m_op;
    std::unique_ptr<SharedCompiles> m_own_compiles;  // a measurer of one GPU alone
    SharedCompiles& m_compiles;
    GpuWorker& m_gpu;
    std::uint64_t m_seed;
    std::map<std::string, std::shared_future<CompileResult>> m_waited;  // what this measurer has waited for
    std::optional<std::string> m_current_problem;
    double m_best_p50_us = 0;  // on the current problem
};

// What identifies the tuned kernel in the store: op, variant, and a hash of the source with every header it includes,
// the kernel name template (variants of one file differ there: another entry point, a literal argument), the launch
// expressions (the same kernel launched with another grid is another measurement) and the L2 state the samples found
// (wire::l2_state) and the ranking rule (rank_timer): resuming never mixes methods (a hot or dirty-flush tuning, or
// one without CUPTI, measures afresh) and best() shows the latest. A library baseline stands for its source by its
// name.
KernelInfo kernel_identity(const SearchSpace& space, const CompileService& jit, const wire::TimingOptions& timing);

// Keeps the first lines of a compile log: the error is at the top, the rest is the instantiation backtrace.
std::string first_lines(const std::string& log, int lines);

}  // namespace ktune
