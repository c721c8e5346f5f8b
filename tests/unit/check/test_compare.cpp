#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/stats.hpp"
#include "tests/unit/check/synthetic.hpp"
#include "tuner/check/compare.hpp"

namespace ktune {
namespace {

using test::Rng;

std::vector<double> lognormal(Rng& rng, double median, double sigma, int n) {
    std::vector<double> s;
    for (int i = 0; i < n; ++i) s.push_back(median * std::exp(sigma * rng.normal()));
    return s;
}

TEST(RegressionThreshold, IsThreePercentForKernelsOfAMillisecondAndLonger) {
    EXPECT_DOUBLE_EQ(regression_threshold(1000), 0.03);
    EXPECT_DOUBLE_EQ(regression_threshold(50000), 0.03);
}

TEST(RegressionThreshold, IsEightPercentForKernelsOfTwoMicrosecondsAndShorter) {
    EXPECT_DOUBLE_EQ(regression_threshold(2), 0.08);
    EXPECT_DOUBLE_EQ(regression_threshold(0.5), 0.08);
}

TEST(RegressionThreshold, IsLogLinearBetweenTheAnchors) {
    const double mid = std::sqrt(k_threshold_short_us * k_threshold_long_us);  // halfway on a log scale
    EXPECT_NEAR(regression_threshold(mid), (k_threshold_short + k_threshold_long) / 2, 1e-12);
    EXPECT_NEAR(regression_threshold(50), 0.054, 0.001);
    for (double us = 2; us < 1000; us *= 1.5) EXPECT_GT(regression_threshold(us), regression_threshold(us * 1.5));
}

TEST(VerdictRules, SlowerNeedsTheWholeIntervalAboveTheLimit) {
    EXPECT_EQ(verdict_for_interval(1.06, 1.10, 0.05), Verdict::slower);
    EXPECT_EQ(verdict_for_interval(1.04, 1.10, 0.05), Verdict::unclear);
}

TEST(VerdictRules, FasterNeedsTheWholeIntervalBelowTheLimit) {
    EXPECT_EQ(verdict_for_interval(0.85, 0.94, 0.05), Verdict::faster);
    EXPECT_EQ(verdict_for_interval(0.85, 0.96, 0.05), Verdict::unclear);
}

TEST(VerdictRules, SameNeedsTheIntervalWithinTheLimits) {
    EXPECT_EQ(verdict_for_interval(0.96, 1.04, 0.05), Verdict::same);
    EXPECT_EQ(verdict_for_interval(1.01, 1.03, 0.05), Verdict::same);  // significant but below the limit
    EXPECT_EQ(verdict_for_interval(0.94, 1.04, 0.05), Verdict::unclear);
}

// Largest distance between the empirical distribution functions of two samples (Kolmogorov-Smirnov).
double ks_distance(std::vector<double> a, std::vector<double> b) {
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    double d = 0;
    for (double v : a) {
        const double fa = double(std::upper_bound(a.begin(), a.end(), v) - a.begin()) / double(a.size());
        const double fb = double(std::upper_bound(b.begin(), b.end(), v) - b.begin()) / double(b.size());
        d = std::max(d, std::abs(fa - fb));
    }
    return d;
}

TEST(BootstrapMedians, FollowTheDistributionOfANaiveResampling) {
    Rng rng(7);
    for (int n : {2, 9, 30, 31}) {
        std::vector<double> x = lognormal(rng, 50, 0.03, n);
        std::sort(x.begin(), x.end());
        const auto fast = bootstrap_medians(x, 20000, 11);
        std::vector<double> naive;
        std::vector<double> buf(std::size_t(n), 0.0);
        for (int r = 0; r < 20000; ++r) {
            for (auto& v : buf) v = x[std::size_t(rng.next() % std::uint64_t(n))];
            std::sort(buf.begin(), buf.end());
            naive.push_back(percentile_sorted(buf, 0.5));
        }
        EXPECT_LT(ks_distance(fast, naive), 0.025) << "n=" << n;  // two samples of 20000: 0.019 at p = 0.001
        EXPECT_LT(ks_distance(naive, fast), 0.025) << "n=" << n;
    }
}

TEST(BootstrapMedians, OfAnOddCountMatchTheExactBinomialDistribution) {
    // The resampled median is x[j] or below when at least k = (n + 1) / 2 of n draws fall on x[0..j]:
    // P = P(Binomial(n, (j + 1) / n) >= k).
    const int n = 9, k = 5;
    std::vector<double> x(n);
    for (int i = 0; i < n; ++i) x[std::size_t(i)] = i;
    const auto med = bootstrap_medians(x, 50000, 5);
    for (int j = 0; j < n; ++j) {
        const double p = double(j + 1) / n;
        double exact = 0;
        for (int i = k; i <= n; ++i)
            exact += std::tgamma(n + 1) / std::tgamma(i + 1) / std::tgamma(n - i + 1) * std::pow(p, i) *
                     std::pow(1 - p, n - i);
        const double got = double(std::count_if(med.begin(), med.end(), [&](double m) { return m <= j; })) / 50000;
        EXPECT_NEAR(got, exact, 0.01) << "j=" << j;
    }
}

TEST(BootstrapMedians, AreTheSameForTheSameSeed) {
    const std::vector<double> x{1, 2, 3, 4, 5, 6, 7, 8};
    EXPECT_EQ(bootstrap_medians(x, 100, 3), bootstrap_medians(x, 100, 3));
    EXPECT_NE(bootstrap_medians(x, 100, 3), bootstrap_medians(x, 100, 4));
}

TEST(MannWhitney, OfSeparatedSamplesMatchesTheNormalApproximation) {
    const auto r = mann_whitney({1, 2, 3}, {4, 5, 6});
    EXPECT_DOUBLE_EQ(r.u, 9);
    EXPECT_DOUBLE_EQ(r.prob_greater, 1);
    EXPECT_NEAR(r.p, 0.0809, 0.0005);  // z = (4.5 - 0.5) / sqrt(5.25)
}

TEST(MannWhitney, OfIdenticalSamplesShowsNoEffect) {
    const auto r = mann_whitney({1, 2, 3, 4}, {1, 2, 3, 4});
    EXPECT_DOUBLE_EQ(r.prob_greater, 0.5);
    EXPECT_DOUBLE_EQ(r.p, 1.0);
}

TEST(CompareSamples, RatioIsTheCurrentMedianOverTheBaselineMedian) {
    const auto c = compare_samples({10, 10, 11, 9, 10, 10}, {12, 12, 13, 11, 12, 12});
    EXPECT_DOUBLE_EQ(c.ratio, 1.2);
    EXPECT_DOUBLE_EQ(c.baseline_p50_us, 10);
    EXPECT_DOUBLE_EQ(c.current_p50_us, 12);
    EXPECT_LE(c.ci_lo, c.ratio);
    EXPECT_GE(c.ci_hi, c.ratio);
    EXPECT_EQ(c.verdict, Verdict::slower);
}

TEST(CompareSamples, GivesTheSameIntervalForTheSameInputs) {
    Rng rng(1);
    const auto a = lognormal(rng, 50, 0.02, 30), b = lognormal(rng, 52, 0.02, 30);
    const auto c1 = compare_samples(a, b), c2 = compare_samples(a, b);
    EXPECT_EQ(c1.ci_lo, c2.ci_lo);
    EXPECT_EQ(c1.ci_hi, c2.ci_hi);
}

TEST(CompareSamples, WithTooFewSamplesIsUnclearAndSaysWhy) {
    const auto c = compare_samples({10, 10, 10}, {20, 20, 20, 20, 20, 20});
    EXPECT_EQ(c.verdict, Verdict::unclear);
    EXPECT_NE(c.note.find("too few samples"), std::string::npos);
}

TEST(CompareSamples, UsesAnExplicitThresholdWhenGiven) {
    CompareOptions o;
    o.threshold = 0.5;
    EXPECT_EQ(compare_samples({10, 10, 11, 9, 10, 10}, {12, 12, 13, 11, 12, 12}, o).verdict, Verdict::same);
}

TEST(CompareSamples, CatchesATenPercentSlowdownOfA50usKernelWithinOneSession) {
    Rng rng(5);
    int caught = 0;
    for (int t = 0; t < 100; ++t) {
        const double sigma = rng.uniform(0.01, 0.03);
        const auto c = compare_samples(lognormal(rng, 50, sigma, 30), lognormal(rng, 55, sigma, 30));
        caught += c.verdict == Verdict::slower;
    }
    EXPECT_GE(caught, 95);
}

TEST(CompareSamples, TakesMillisecondsForThousandsOfSamples) {
    Rng rng(3);
    const auto a = lognormal(rng, 50, 0.02, 4000), b = lognormal(rng, 50, 0.02, 4000);
    const auto t0 = std::chrono::steady_clock::now();
    const auto c = compare_samples(a, b);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(c.verdict, Verdict::same);
    EXPECT_LT(s, 0.5);  // typically ~2 ms: the bootstrap cost does not grow with n
}

}  // namespace
}  // namespace ktune
