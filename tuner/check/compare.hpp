#pragma once
// The statistics of `ktune check`: is a set of current timing samples slower than the baseline's, beyond noise?
//
// Statistic: the ratio of medians, current / baseline, with a bootstrap percentile confidence interval (95 %, 2000
// resamples, seeded: the same inputs always give the same interval). Medians because GPU timings have a long right
// tail (preemption, clock ramps): a few outliers must not move the verdict. The Mann-Whitney U test and the
// common-language effect size P(current > baseline) are computed as a second opinion for reports; they do not
// decide, because with hundreds of samples they call any drift of a shared GPU "significant".
//
// Threshold: the smallest change that counts, as a function of the baseline median (regression_threshold()). The
// confidence interval covers the sampling noise of the two sample sets; the threshold is the allowance for what the
// interval cannot see: the drift of a GPU between the session that recorded the baseline and today (shared GPUs move
// the median of a session by 2 to 3 %, short kernels more than long ones: launch and clock jitter weigh more).
//
// Verdict rules, with [lo, hi] the confidence interval of the ratio and t the threshold:
//   slower   lo > 1 + t               the whole interval lies above the allowance
//   faster   hi < 1 - t               the whole interval lies below it
//   same     1 - t <= lo, hi <= 1 + t the interval lies within it
//   unclear  otherwise (the interval straddles 1 + t or 1 - t, or a side has fewer than min_samples samples)
// "Slower" is therefore never final after one session: see check_runner.hpp for the re-measurement.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ktune {

enum class Verdict {
    same,
    faster,
    slower,
    unclear,
    failed,  // the kernel did not compile, validate, launch or finish (check_runner only)
};
std::string_view verdict_name(Verdict v);  // "same", "faster", "slower", "unclear", "failed"

// The threshold is log-linear in the median between two anchors and constant outside them:
//   median >= k_threshold_long_us   -> k_threshold_long   (3 % at 1 ms and above)
//   median <= k_threshold_short_us  -> k_threshold_short  (8 % at 2 us and below)
//   between: t = long + (short - long) * log(long_us / median) / log(long_us / short_us)   (5.4 % at 50 us)
// Why these: the limit must exceed the drift between the recording session and today (sessions on a shared H100 move
// by up to 2 to 3 %) plus the interval's own half-width, yet leave a 10 % slowdown of a 50 us kernel clearly above
// it. At 1 ms and beyond, drift of more than 3 % makes "unclear" (never a failure) more frequent.
inline constexpr double k_threshold_long_us = 1000.0;
inline constexpr double k_threshold_long = 0.03;
inline constexpr double k_threshold_short_us = 2.0;
inline constexpr double k_threshold_short = 0.08;
double regression_threshold(double median_us);

Verdict verdict_for_interval(double lo, double hi, double threshold);

struct CompareOptions {
    int resamples = 2000;
    double confidence = 0.95;
    std::uint64_t seed = 0x6b74756e65ULL;  // "ktune"
    int min_samples = 5;                   // fewer on either side: unclear
    double threshold = 0;                  // > 0 overrides regression_threshold(baseline median)
};

struct Comparison {
    std::int64_t n_baseline = 0, n_current = 0;
    double baseline_p50_us = 0, current_p50_us = 0;
    double ratio = 0;             // current p50 / baseline p50
    double ci_lo = 0, ci_hi = 0;  // confidence interval of the ratio (0 and +inf when not computed)
    double threshold = 0;         // relative: 0.054 means +-5.4 %
    Verdict verdict = Verdict::unclear;
    double mann_whitney_p = 1;  // two-sided, normal approximation with tie correction
    double prob_slower = 0.5;   // P(current sample > baseline sample) + P(tie) / 2
    std::string note;           // why the verdict is unclear when it is not the interval's doing
};

Comparison compare_samples(const std::vector<double>& baseline_us, const std::vector<double>& current_us,
                           const CompareOptions& options = {});

// ---- the pieces, exposed for tests ----

// `resamples` medians of bootstrap resamples (n draws with replacement) of an ascending-sorted vector. Drawn in O(1)
// each, independent of n: the k-th smallest of n uniform indices is floor(n U) with U ~ Beta(k, n + 1 - k), and the
// next one above it is the minimum of the n - k indices left above U (even n averages the two middle ones).
std::vector<double> bootstrap_medians(const std::vector<double>& sorted, int resamples, std::uint64_t seed);

struct MannWhitney {
    double u = 0;               // of the second sample: the number of (a, b) pairs with b > a, ties counting 1/2
    double p = 1;               // two-sided
    double prob_greater = 0.5;  // u / (na nb)
};
MannWhitney mann_whitney(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace ktune
