#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace ktune {

double percentile_sorted(const std::vector<double>& sorted, double q) {
    if (sorted.empty()) return 0;
    const double pos = std::clamp(q, 0.0, 1.0) * double(sorted.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const auto hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (pos - double(lo)) * (sorted[hi] - sorted[lo]);
}

double median_ci_relative_halfwidth(const std::vector<double>& sorted) {
    const auto n = sorted.size();
    if (n < 6) return std::numeric_limits<double>::infinity();
    // Ranks of the order statistics that bound the median with ~95 % confidence (normal approximation to the
    // binomial(n, 1/2) distribution of the number of samples below the median).
    const double half = 1.96 * std::sqrt(double(n)) / 2.0;
    const auto lo = static_cast<std::size_t>(std::max(0.0, std::floor(double(n) / 2.0 - half)));
    const auto hi = static_cast<std::size_t>(std::min(double(n - 1), std::ceil(double(n) / 2.0 + half)));
    const double median = percentile_sorted(sorted, 0.5);
    if (median <= 0) return std::numeric_limits<double>::infinity();
    return (sorted[hi] - sorted[lo]) / 2.0 / median;
}

SampleStats summarize(std::vector<double> samples) {
    SampleStats s;
    s.n = static_cast<std::int64_t>(samples.size());
    if (samples.empty()) return s;
    std::sort(samples.begin(), samples.end());
    s.min = samples.front();
    s.max = samples.back();
    s.p50 = percentile_sorted(samples, 0.50);
    s.p95 = percentile_sorted(samples, 0.95);
    s.p99 = percentile_sorted(samples, 0.99);
    s.iqr = percentile_sorted(samples, 0.75) - percentile_sorted(samples, 0.25);
    s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / double(samples.size());
    double ss = 0;
    for (double x : samples) ss += (x - s.mean) * (x - s.mean);
    s.stddev = samples.size() > 1 ? std::sqrt(ss / double(samples.size() - 1)) : 0.0;
    s.median_ci_rel = median_ci_relative_halfwidth(samples);
    return s;
}

double trimmed_mean(std::vector<double> samples, double trim) {
    if (samples.empty()) return 0;
    std::sort(samples.begin(), samples.end());
    const auto cut = static_cast<std::size_t>(std::floor(std::clamp(trim, 0.0, 0.49) * double(samples.size())));
    const auto first = samples.begin() + static_cast<std::ptrdiff_t>(cut);
    const auto last = samples.end() - static_cast<std::ptrdiff_t>(cut);
    return std::accumulate(first, last, 0.0) / double(last - first);
}

StoppingRule::Verdict StoppingRule::check(const std::vector<double>& samples, double elapsed_seconds) const {
    const int n = static_cast<int>(samples.size());
    if (n >= max_samples) return Verdict::sample_cap;
    if (n >= min_samples) {
        std::vector<double> sorted = samples;
        std::sort(sorted.begin(), sorted.end());
        if (median_ci_relative_halfwidth(sorted) <= target_rel) return Verdict::converged;
    }
    // The time cap applies only once the minimum is in, so every measurement has at least min_samples samples.
    if (n >= min_samples && elapsed_seconds >= time_cap_seconds) return Verdict::time_cap;
    return Verdict::more;
}

}  // namespace ktune
