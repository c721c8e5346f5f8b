#pragma once
// Sample statistics and the adaptive stopping rule. Pure C++ (no CUDA), shared by the worker and the host.
#include <vector>

#include "core/measurement.hpp"

namespace ktune {

// Percentile by linear interpolation between closest ranks (q in [0, 1]) of an ascending-sorted vector.
double percentile_sorted(const std::vector<double>& sorted, double q);

SampleStats summarize(std::vector<double> samples);

// Mean of the samples left after dropping floor(trim * n) from each end. For durations read off a clock that ticks
// coarsely against them (CUPTI's and the events' 32 ns on an H100, 1.6 % of a 2 us kernel), the median snaps to a tick
// while the mean does not: a kernel's start falls anywhere within a tick, so a duration between two ticks reads as the
// lower or the higher one in proportion, and their mean converges on it. The trim keeps a rare stall out of it.
double trimmed_mean(std::vector<double> samples, double trim = 0.1);

// Distribution-free 95 % confidence interval of the median from order statistics (binomial ranks
// n/2 -+ 1.96 sqrt(n)/2), returned as its half-width relative to the median; +inf when n is too small (< 6).
double median_ci_relative_halfwidth(const std::vector<double>& sorted);

// When to stop sampling: at least min_samples, then until the median's 95 % CI is within target_rel of it, or the
// sample count or the time budget runs out.
struct StoppingRule {
    int min_samples = 10;
    int max_samples = 2000;
    double target_rel = 0.01;
    double time_cap_seconds = 1.0;  // wall time spent sampling one measurement

    enum class Verdict { more, converged, sample_cap, time_cap };
    Verdict check(const std::vector<double>& samples, double elapsed_seconds) const;
};

}  // namespace ktune
