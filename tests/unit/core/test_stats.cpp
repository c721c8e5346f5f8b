#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/stats.hpp"

namespace ktune {
namespace {

TEST(Percentile, InterpolatesBetweenClosestRanks) {
    const std::vector<double> v{1, 2, 3, 4, 5};
    EXPECT_DOUBLE_EQ(percentile_sorted(v, 0.0), 1);
    EXPECT_DOUBLE_EQ(percentile_sorted(v, 0.5), 3);
    EXPECT_DOUBLE_EQ(percentile_sorted(v, 1.0), 5);
    EXPECT_DOUBLE_EQ(percentile_sorted(v, 0.125), 1.5);
}

TEST(Summarize, ComputesOrderStatisticsMeanAndSpreadOfUnsortedSamples) {
    const SampleStats s = summarize({5, 1, 4, 2, 3});
    EXPECT_EQ(s.n, 5);
    EXPECT_DOUBLE_EQ(s.min, 1);
    EXPECT_DOUBLE_EQ(s.max, 5);
    EXPECT_DOUBLE_EQ(s.p50, 3);
    EXPECT_DOUBLE_EQ(s.mean, 3);
    EXPECT_NEAR(s.stddev, std::sqrt(2.5), 1e-12);
    EXPECT_DOUBLE_EQ(s.iqr, 2);
    EXPECT_NEAR(s.p95, 4.8, 1e-12);
}

TEST(Summarize, OfNoSamplesIsAllZero) {
    const SampleStats s = summarize({});
    EXPECT_EQ(s.n, 0);
    EXPECT_EQ(s.p50, 0);
}

TEST(TrimmedMean, DropsTheSameShareFromEachEnd) {
    // 10 samples, 10 %: one off each end (the 100 and the 0), the mean of the other eight.
    EXPECT_DOUBLE_EQ(trimmed_mean({100, 1, 2, 3, 4, 0, 5, 6, 7, 8}), 4.5);
    EXPECT_DOUBLE_EQ(trimmed_mean({3, 1, 2}), 2);  // floor(0.3) = 0: nothing dropped
    EXPECT_DOUBLE_EQ(trimmed_mean({}), 0);
}

TEST(TrimmedMean, RecoversADurationBetweenClockTicksWhereTheMedianCannot) {
    // A 2.070 us kernel read off a 32 ns clock whose phase is random against the kernel's start: each reading is
    // 2.048 or 2.080 us (a tick boundary falls inside the kernel 2 or 3 times); the median is one of the two ticks, the
    // trimmed mean of many readings lands within a fraction of a tick of the true duration.
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> phase(0.0, 0.032);
    const double tick = 0.032, duration = 2.070;
    std::vector<double> readings;
    for (int i = 0; i < 400; ++i) {
        const double start = phase(rng);
        readings.push_back(tick * (std::floor((start + duration) / tick) - std::floor(start / tick)));
    }
    const double median = summarize(readings).p50;
    EXPECT_TRUE(std::abs(median - 2.048) < 1e-9 || std::abs(median - 2.080) < 1e-9) << median;
    EXPECT_GT(std::abs(median - duration), 0.009);
    EXPECT_NEAR(trimmed_mean(readings), duration, 0.004);
}

TEST(MedianConfidenceInterval, IsInfiniteForTooFewSamples) {
    EXPECT_TRUE(std::isinf(median_ci_relative_halfwidth({1, 2, 3})));
}

TEST(MedianConfidenceInterval, IsZeroForIdenticalSamples) {
    EXPECT_DOUBLE_EQ(median_ci_relative_halfwidth(std::vector<double>(50, 7.0)), 0.0);
}

TEST(MedianConfidenceInterval, ShrinksAsSamplesGrow) {
    std::mt19937 rng(1);
    std::normal_distribution<double> noise(100.0, 2.0);
    auto ci_for = [&](int n) {
        std::vector<double> v(n);
        for (auto& x : v) x = noise(rng);
        std::sort(v.begin(), v.end());
        return median_ci_relative_halfwidth(v);
    };
    const double small = ci_for(20), large = ci_for(2000);
    EXPECT_GT(small, large);
    // sd 2 % of the median: with 2000 samples the CI half-width is about 1.96*1.25*0.02/sqrt(2000) ~ 0.1 %.
    EXPECT_LT(large, 0.003);
}

TEST(StoppingRule, AsksForMoreBelowTheMinimumEvenWhenTimeIsUp) {
    StoppingRule rule;
    rule.min_samples = 10;
    EXPECT_EQ(rule.check(std::vector<double>(5, 1.0), 100.0), StoppingRule::Verdict::more);
}

TEST(StoppingRule, ConvergesOnSteadySamples) {
    StoppingRule rule;
    EXPECT_EQ(rule.check(std::vector<double>(10, 1.0), 0.0), StoppingRule::Verdict::converged);
}

TEST(StoppingRule, StopsAtTheTimeCapOnNoisySamplesAndSaysSo) {
    StoppingRule rule;
    rule.time_cap_seconds = 0.5;
    std::vector<double> noisy;
    for (int i = 0; i < 20; ++i) noisy.push_back(i % 2 ? 1.0 : 3.0);
    EXPECT_EQ(rule.check(noisy, 0.1), StoppingRule::Verdict::more);
    EXPECT_EQ(rule.check(noisy, 0.6), StoppingRule::Verdict::time_cap);
}

TEST(StoppingRule, StopsAtTheSampleCap) {
    StoppingRule rule;
    rule.max_samples = 30;
    std::vector<double> noisy;
    for (int i = 0; i < 30; ++i) noisy.push_back(i % 2 ? 1.0 : 3.0);
    EXPECT_EQ(rule.check(noisy, 0.0), StoppingRule::Verdict::sample_cap);
}

}  // namespace
}  // namespace ktune
