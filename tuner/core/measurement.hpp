#pragma once
// What one evaluation of (kernel source, configuration, problem, device) produced: its status, the statistics of its
// timing samples, and what the compiler reported. Plain data: the store persists it, reports read it.
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "tuner/core/types.hpp"

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

struct Measurement {
    Status status = Status::ok;
    std::string message;  // the compile log, validation mismatch summary, or driver error; empty when ok

    SampleStats stats;             // event-timed kernel durations (cold L2 unless hot was asked)
    std::vector<double> samples_us;
    bool time_cap_hit = false;     // sampling stopped at the time cap before the CI target was met
    double cupti_p50_us = 0;       // CUPTI kernel duration p50 (cross-check), 0 when not taken
    double gbps = 0;               // bytes the op must move / p50
    unsigned dynamic_shared_bytes = 0;

    // Validation against the reference.
    std::int64_t mismatches = 0;
    double max_abs_error = 0;

    CompileInfo compile;
};

// How ok measurements rank for "best", fastest first: the event p50, then, on a tie, one with a CUPTI kernel time
// before one without, then the lower kernel time (event p50s come in 32 ns ticks and tie exactly at decode sizes).
// Store::best orders its SQL the same way (then by row).
inline std::tuple<double, bool, double> best_rank(const Measurement& m) {
    return {m.stats.p50, !(m.cupti_p50_us > 0), m.cupti_p50_us > 0 ? m.cupti_p50_us : 0.0};
}

}  // namespace ktune
