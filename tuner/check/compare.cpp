#include "tuner/check/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/stats.hpp"
#include "tuner/check/random.hpp"

namespace ktune {

std::string_view verdict_name(Verdict v) {
    switch (v) {
        case Verdict::same:
            return "same";
        case Verdict::faster:
            return "faster";
        case Verdict::slower:
            return "slower";
        case Verdict::unclear:
            return "unclear";
        case Verdict::failed:
            return "failed";
    }
    return "?";
}

double regression_threshold(double median_us) {
    if (!(median_us < k_threshold_long_us)) return k_threshold_long;  // also NaN
    if (median_us <= k_threshold_short_us) return k_threshold_short;
    const double f = std::log(k_threshold_long_us / median_us) / std::log(k_threshold_long_us / k_threshold_short_us);
    return k_threshold_long + (k_threshold_short - k_threshold_long) * f;
}

Verdict verdict_for_interval(double lo, double hi, double threshold) {
    if (lo > 1.0 + threshold) return Verdict::slower;
    if (hi < 1.0 - threshold) return Verdict::faster;
    if (lo >= 1.0 - threshold && hi <= 1.0 + threshold) return Verdict::same;
    return Verdict::unclear;
}

namespace {

std::size_t index_of(double u, std::size_t n) { return std::min(n - 1, static_cast<std::size_t>(u * double(n))); }

double draw_resampled_median(const std::vector<double>& sorted, check_random::Rng& rng) {
    const std::size_t n = sorted.size();
    if (n == 1) return sorted[0];
    if (n % 2 == 1) {
        const double k = double((n + 1) / 2);
        return sorted[index_of(rng.beta(k, double(n) + 1.0 - k), n)];
    }
    const double k = double(n / 2);
    const double u1 = rng.beta(k, double(n) + 1.0 - k);
    // The n - k uniforms above u1 are uniform on (u1, 1); the smallest of them is the (k+1)-th overall.
    const double m = 1.0 - std::pow(rng.uniform(), 1.0 / (double(n) - k));
    const double u2 = u1 + (1.0 - u1) * m;
    return 0.5 * (sorted[index_of(u1, n)] + sorted[index_of(u2, n)]);
}

double median_of_sorted(const std::vector<double>& sorted) { return percentile_sorted(sorted, 0.5); }

}  // namespace

std::vector<double> bootstrap_medians(const std::vector<double>& sorted, int resamples, std::uint64_t seed) {
    std::vector<double> out;
    if (sorted.empty() || resamples <= 0) return out;
    check_random::Rng rng(seed);
    out.reserve(std::size_t(resamples));
    for (int i = 0; i < resamples; ++i) out.push_back(draw_resampled_median(sorted, rng));
    return out;
}

MannWhitney mann_whitney(const std::vector<double>& a, const std::vector<double>& b) {
    MannWhitney r;
    const double na = double(a.size()), nb = double(b.size());
    if (a.empty() || b.empty()) return r;
    std::vector<std::pair<double, int>> all;  // value, 0 = a / 1 = b
    all.reserve(a.size() + b.size());
    for (double x : a) all.emplace_back(x, 0);
    for (double x : b) all.emplace_back(x, 1);
    std::sort(all.begin(), all.end());
    const double n = na + nb;
    double rank_sum_b = 0, tie_term = 0;
    for (std::size_t i = 0; i < all.size();) {
        std::size_t j = i;
        while (j < all.size() && all[j].first == all[i].first) ++j;
        const double avg_rank = (double(i) + double(j) + 1.0) / 2.0;  // ranks i+1 .. j
        for (std::size_t k = i; k < j; ++k)
            if (all[k].second == 1) rank_sum_b += avg_rank;
        const double t = double(j - i);
        tie_term += t * t * t - t;
        i = j;
    }
    r.u = rank_sum_b - nb * (nb + 1.0) / 2.0;
    r.prob_greater = r.u / (na * nb);
    const double mean = na * nb / 2.0;
    const double var = na * nb / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if (var <= 0) return r;  // every value tied: no evidence either way
    const double diff = std::abs(r.u - mean);
    const double z = std::max(0.0, diff - 0.5) / std::sqrt(var);  // continuity correction
    r.p = std::erfc(z / std::sqrt(2.0));
    return r;
}

Comparison compare_samples(const std::vector<double>& baseline_us, const std::vector<double>& current_us,
                           const CompareOptions& options) {
    Comparison c;
    std::vector<double> a = baseline_us, b = current_us;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    c.n_baseline = std::int64_t(a.size());
    c.n_current = std::int64_t(b.size());
    c.baseline_p50_us = median_of_sorted(a);
    c.current_p50_us = median_of_sorted(b);
    c.threshold = options.threshold > 0 ? options.threshold : regression_threshold(c.baseline_p50_us);
    c.ci_lo = 0;
    c.ci_hi = std::numeric_limits<double>::infinity();
    if (c.baseline_p50_us > 0) c.ratio = c.current_p50_us / c.baseline_p50_us;

    const auto min_n = std::int64_t(std::max(1, options.min_samples));
    if (c.n_baseline < min_n || c.n_current < min_n || c.baseline_p50_us <= 0) {
        c.verdict = Verdict::unclear;
        c.note = fmt::format("too few samples to compare ({} baseline, {} current; at least {} each)", c.n_baseline,
                             c.n_current, min_n);
        return c;
    }

    const auto mw = mann_whitney(a, b);
    c.mann_whitney_p = mw.p;
    c.prob_slower = mw.prob_greater;

    // Independent streams for the two sides, both derived from the one seed.
    std::uint64_t s = options.seed;
    const int resamples = std::max(100, options.resamples);
    const auto med_a = bootstrap_medians(a, resamples, check_random::splitmix64(s));
    const auto med_b = bootstrap_medians(b, resamples, check_random::splitmix64(s));
    std::vector<double> ratios(med_a.size());
    for (std::size_t i = 0; i < ratios.size(); ++i) ratios[i] = med_b[i] / med_a[i];
    std::sort(ratios.begin(), ratios.end());
    const double alpha = 1.0 - std::clamp(options.confidence, 0.5, 0.9999);
    c.ci_lo = percentile_sorted(ratios, alpha / 2);
    c.ci_hi = percentile_sorted(ratios, 1 - alpha / 2);
    c.verdict = verdict_for_interval(c.ci_lo, c.ci_hi, c.threshold);
    return c;
}

}  // namespace ktune
