// The check's error rates on synthetic H100-like noise (see synthetic.hpp): what the CI job promises.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/unit/check/synthetic.hpp"
#include "tuner/check/check_runner.hpp"

namespace ktune {
namespace {

using namespace test;

struct Rates {
    int trials = 0, first_slower = 0, final_slower = 0, failing_exit = 0, remeasured = 0, unclear = 0, faster = 0;
    double pct(int n) const { return 100.0 * n / trials; }
};

// One case of `median_us` recorded in one session of 30 samples; the current kernel's true median is
// median_us * factor. With `recorded_drift`, the measurer can also run the recorded kernel (A/B), whose true median
// today is median_us * recorded_drift.
Rates run_trials(int trials, double median_us, double factor, std::uint64_t seed0, double recorded_drift = 0,
                 double today_drift = 1.0) {
    Rates r;
    for (int t = 0; t < trials; ++t) {
        Rng rng(seed0 + std::uint64_t(t));
        const double sigma = rng.uniform(0.01, 0.03);
        Baseline b = empty_baseline();
        b.cases.push_back(make_case(rng, "rmsnorm", 4096, median_us, sigma));
        const auto& c = b.cases[0];
        FakeMeasurer m(rng.next());
        m.set(c.id(), c.config_key, median_us * factor * today_drift, sigma);
        if (recorded_drift > 0) m.set_recorded(c.id(), median_us * recorded_drift, sigma);
        CheckOptions o;
        o.compare.seed = seed0 + std::uint64_t(t);
        const CheckReport report = run_check(b, k_device_key, m, o);
        const CaseResult& row = report.cases.at(0);
        ++r.trials;
        r.first_slower += row.first_verdict == Verdict::slower;
        r.final_slower += row.verdict == Verdict::slower;
        r.failing_exit += check_exit_code(report) != 0;
        r.remeasured += row.remeasured.has_value();
        r.unclear += row.verdict == Verdict::unclear;
        r.faster += row.verdict == Verdict::faster;
    }
    return r;
}

void print(const char* what, const Rates& r) {
    std::printf(
        "[ rates    ] %s: %d trials, first session slower %.2f %%, final slower %.2f %%, failing exit %.2f %%, "
        "re-measured %.1f %%, final unclear %.1f %%\n",
        what, r.trials, r.pct(r.first_slower), r.pct(r.final_slower), r.pct(r.failing_exit), r.pct(r.remeasured),
        r.pct(r.unclear));
}

TEST(CheckStatistics, CatchesATenPercentSlowdownOfA50usKernelInAtLeast95PercentOfTrials) {
    const Rates r = run_trials(200, 50.0, 1.10, 10'000);
    print("10 % slower, 50 us", r);
    EXPECT_GE(r.final_slower, 190);
    EXPECT_EQ(r.failing_exit, r.final_slower);
}

TEST(CheckStatistics, NoiseAloneFailsFewerThanOnePercentOfChecksOfA50usKernel) {
    const Rates r = run_trials(2000, 50.0, 1.0, 20'000);
    print("noise only, 50 us", r);
    EXPECT_LT(r.first_slower, 20);  // < 1 % before any re-measurement
    EXPECT_LT(r.final_slower, 20);  // and far fewer after it
    EXPECT_LE(r.final_slower, r.first_slower);
    EXPECT_EQ(r.failing_exit, r.final_slower);
}

TEST(CheckStatistics, NoiseAloneFailsFewerThanOnePercentOfChecksAtEveryDuration) {
    for (double us : {3.0, 500.0, 2000.0}) {
        const Rates r = run_trials(500, us, 1.0, 30'000 + std::uint64_t(us));
        print(us < 10 ? "noise only, 3 us" : us < 1000 ? "noise only, 500 us" : "noise only, 2 ms", r);
        EXPECT_LT(r.final_slower, 5) << us << " us";
    }
}

TEST(CheckStatistics, ATenPercentSpeedupOfA50usKernelIsCalledFaster) {
    const Rates r = run_trials(100, 50.0, 0.90, 40'000);
    print("10 % faster, 50 us", r);
    EXPECT_GE(r.faster, 90);
    EXPECT_EQ(r.failing_exit, 0);
}

TEST(CheckStatistics, WithTheRecordedKernelAGpuThatIsSlowerTodayIsNotBlamedOnTheCode) {
    // Today every kernel runs 8 % slower (a busier GPU); the code did not change. A/A mode must blame the code (it
    // cannot tell), A/B mode sees the recorded kernel slow down alike and calls it the same.
    const Rates aa = run_trials(100, 50.0, 1.0, 50'000, 0, 1.08);
    const Rates ab = run_trials(100, 50.0, 1.0, 50'000, 1.08, 1.08);
    print("GPU 8 % slower today, A/A", aa);
    print("GPU 8 % slower today, A/B", ab);
    EXPECT_GT(aa.final_slower, 50);
    EXPECT_EQ(ab.final_slower, 0);
}

TEST(CheckStatistics, WithTheRecordedKernelATenPercentSlowdownIsStillCaught) {
    const Rates r = run_trials(100, 50.0, 1.10, 60'000, 1.0);
    print("10 % slower, 50 us, A/B", r);
    EXPECT_GE(r.final_slower, 95);
}

}  // namespace
}  // namespace ktune
