#pragma once
// What one evaluation of (kernel source, configuration, problem, device) produced: its status, the statistics of its
// timing samples, and what the compiler reported. Plain data: the store persists it, reports read it.
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/types.hpp"

namespace ktune {

// Statistics of a set of timing samples, in microseconds.
struct SampleStats {
    std::int64_t n = 0;
    double min = 0, p50 = 0, p95 = 0, p99 = 0, max = 0, mean = 0, stddev = 0, iqr = 0;
    // Half-width of the distribution-free 95 % confidence interval of the median, relative to the median.
    double median_ci_rel = 0;
};

// What the compiler said about one kernel instance.
struct CompileInfo {
    int registers = 0;
    int spill_store_bytes = 0;
    int spill_load_bytes = 0;
    int stack_bytes = 0;
    int static_shared_bytes = 0;
    double compile_seconds = 0;
    bool cache_hit = false;
};

// Which time ranks a measurement for "best". Events by default; where the event time is mostly the GPU front end's
// (decode sizes: ~2.3 us of a 4.3 us event time on an H100, moving by 0.07-0.15 us from one process to the next while
// the kernel's CUPTI duration does not), the kernel time (tuner/session/space_measurer.hpp says where).
enum class RankTimer { event, kernel };

struct Measurement {
    Status status = Status::ok;
    std::string message;  // the compile log, validation mismatch summary, or driver error; empty when ok

    SampleStats stats;  // event-timed kernel durations (cold L2 unless hot was asked)
    std::vector<double> samples_us;
    bool time_cap_hit = false;             // sampling stopped at the time cap before the CI target was met
    std::vector<double> cupti_samples_us;  // CUPTI kernel durations, raw; empty when not taken
    double cupti_p50_us = 0;               // their p50 (what kernel-time peer methods compare with), 0 when not taken
    double kernel_us = 0;  // their 10 %-trimmed mean: the kernel time below the clock's tick, 0 when not taken
    RankTimer ranked_by = RankTimer::event;
    double gbps = 0;  // bytes the op must move / p50
    unsigned dynamic_shared_bytes = 0;

    // Validation against the reference.
    std::int64_t mismatches = 0;
    double max_abs_error = 0;

    CompileInfo compile;

    // The time "best" ranks this measurement by: the kernel time where ranked_by says so and one was taken.
    bool ranked_by_kernel_time() const { return ranked_by == RankTimer::kernel && kernel_us > 0; }
    double rank_us() const { return ranked_by_kernel_time() ? kernel_us : stats.p50; }
};

inline std::string_view rank_timer_name(RankTimer t) { return t == RankTimer::kernel ? "kernel" : "event"; }

// How ok measurements rank for "best", fastest first: rank_us(); on a tie of event-ranked ones (event p50s come in 32
// ns ticks and tie exactly at small sizes), one with a kernel time before one without, then the lower kernel time; on a
// tie of kernel-ranked ones, the lower event p50. Store::best orders its SQL the same way (then by row).
inline std::tuple<double, bool, double> best_rank(const Measurement& m) {
    if (m.ranked_by_kernel_time()) return {m.kernel_us, false, m.stats.p50};
    return {m.stats.p50, !(m.kernel_us > 0), m.kernel_us > 0 ? m.kernel_us : 0.0};
}

}  // namespace ktune
