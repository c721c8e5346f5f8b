#include <gtest/gtest.h>

#include <deque>

#include "tests/unit/check/synthetic.hpp"
#include "tuner/check/check_output.hpp"
#include "tuner/check/check_runner.hpp"

namespace ktune {
namespace {

using namespace test;

constexpr double k_us = 50.0;

// Serves sessions around medians given per call (k_us * factor), with little noise and no drift, so a test decides
// what every session looks like; logs the calls.
class ScriptedMeasurer : public CaseMeasurer {
public:
    explicit ScriptedMeasurer(std::function<double(int call, const std::string& config)> factor, bool recorded = false)
        : m_factor(std::move(factor)), m_recorded(recorded) {}

    std::vector<double> measure(const BaselineCase& c, const std::string& config, int min_samples) override {
        calls.push_back("measure " + config);
        return session(c, config, min_samples);
    }

    std::optional<std::vector<double>> measure_recorded(const BaselineCase& c, int min_samples) override {
        ++recorded_asked;
        if (!m_recorded) return std::nullopt;
        calls.push_back("recorded");
        return session(c, "recorded", min_samples);
    }

    std::vector<std::string> calls;
    int recorded_asked = 0;

private:
    std::vector<double> session(const BaselineCase&, const std::string& config, int n) {
        NoiseModel quiet;
        quiet.session_shift = 0;
        quiet.outlier_rate = 0;
        return draw_session(m_rng, k_us * m_factor(int(calls.size()), config), 0.01, n, quiet);
    }

    std::function<double(int, const std::string&)> m_factor;
    bool m_recorded;
    Rng m_rng{99};
};

Baseline one_case_baseline(std::uint64_t seed = 1) {
    Rng rng(seed);
    NoiseModel quiet;
    quiet.session_shift = 0;
    quiet.outlier_rate = 0;
    Baseline b = empty_baseline();
    b.cases.push_back(make_case(rng, "rmsnorm", 4096, k_us, 0.01, 30, 1, quiet));
    return b;
}

CheckOptions options(int rounds = 5) {
    CheckOptions o;
    o.remeasure_rounds = rounds;
    return o;
}

// The first session at `first`, every later session at `later`.
auto first_then(double first, double later) {
    return [=](int call, const std::string&) { return call == 1 ? first : later; };
}

TEST(CheckRunner, ASameFirstVerdictIsFinalAfterOneSession) {
    ScriptedMeasurer m(first_then(1.0, 1.0));
    const auto r = run_check(one_case_baseline(), k_device_key, m, options());
    EXPECT_EQ(r.cases[0].verdict, Verdict::same);
    EXPECT_FALSE(r.cases[0].remeasured);
    EXPECT_EQ(m.calls.size(), 1u);
    EXPECT_EQ(check_exit_code(r), exit_ok);
}

TEST(CheckRunner, AnUnclearFirstVerdictTriggersTwoArmsPerRound) {
    // Slightly above the limit (5.4 % at 50 us): the interval straddles it.
    const double limit = 1 + regression_threshold(k_us);
    ScriptedMeasurer m(first_then(limit, 1.0));
    const auto r = run_check(one_case_baseline(), k_device_key, m, options(4));
    const CaseResult& c = r.cases[0];
    EXPECT_EQ(c.first_verdict, Verdict::unclear);
    ASSERT_TRUE(c.remeasured);
    EXPECT_EQ(c.rounds, 4);
    EXPECT_EQ(c.reference, ReferenceKind::same_code);
    EXPECT_EQ(m.calls.size(), 1u + 2 * 4);
    EXPECT_EQ(m.recorded_asked, 1);  // asked once, then the current code stands in
    EXPECT_EQ(c.verdict, Verdict::same);
    ASSERT_TRUE(c.stability);
    EXPECT_EQ(c.stability->verdict, Verdict::same);
}

TEST(CheckRunner, TheReferenceArmInterleavesWithTheCurrentArmInAlternatingOrder) {
    const double limit = 1 + regression_threshold(k_us);
    ScriptedMeasurer m(first_then(limit, 1.0), /*recorded=*/true);
    const auto r = run_check(one_case_baseline(), k_device_key, m, options(3));
    const std::vector<std::string> expected{
        "measure BLOCK=256,VEC=8",  // first session
        "measure BLOCK=256,VEC=8",
        "recorded",  // round 1: current, reference
        "recorded",
        "measure BLOCK=256,VEC=8",  // round 2: reference, current
        "measure BLOCK=256,VEC=8",
        "recorded",  // round 3
    };
    EXPECT_EQ(m.calls, expected);
    EXPECT_EQ(r.cases[0].reference, ReferenceKind::recorded_kernel);
    ASSERT_TRUE(r.cases[0].gpu_drift);
    EXPECT_NEAR(*r.cases[0].gpu_drift, 1.0, 0.02);
}

TEST(CheckRunner, AReproducedSlowdownFailsTheCheck) {
    ScriptedMeasurer m(first_then(1.2, 1.2));
    const auto r = run_check(one_case_baseline(), k_device_key, m, options());
    const CaseResult& c = r.cases[0];
    EXPECT_EQ(c.first_verdict, Verdict::slower);
    EXPECT_EQ(c.verdict, Verdict::slower);
    EXPECT_TRUE(c.remeasured);
    EXPECT_NEAR(c.decisive().ratio, 1.2, 0.02);
    EXPECT_FALSE(r.passed());
    EXPECT_EQ(check_exit_code(r), exit_failure);
}

TEST(CheckRunner, AFirstSlowerThatDoesNotReproduceIsNotFinal) {
    ScriptedMeasurer m(first_then(1.2, 1.0));
    const auto r = run_check(one_case_baseline(), k_device_key, m, options());
    const CaseResult& c = r.cases[0];
    EXPECT_EQ(c.first_verdict, Verdict::slower);
    EXPECT_EQ(c.verdict, Verdict::same);
    ASSERT_FALSE(c.notes.empty());
    EXPECT_NE(c.notes[0].find("did not reproduce"), std::string::npos);
    EXPECT_EQ(check_exit_code(r), exit_ok);
}

TEST(CheckRunner, AnUnstableGpuMakesASlowerCaseUnclear) {
    // In every round the current arm runs 15 % slow and the reference (the same kernel) does not: the GPU disagrees
    // with itself. Rounds go (current, reference), (reference, current), ...: calls 2, 5, 6, 9, 10 are current.
    auto factor = [](int call, const std::string&) {
        if (call == 1) return 1.15;
        const int k = call - 2, round = k / 2, pos = k % 2;
        const bool current = (round % 2 == 0) == (pos == 0);
        return current ? 1.15 : 1.0;
    };
    ScriptedMeasurer m(factor);
    const auto r = run_check(one_case_baseline(), k_device_key, m, options());
    const CaseResult& c = r.cases[0];
    ASSERT_TRUE(c.stability);
    EXPECT_EQ(c.stability->verdict, Verdict::slower);
    EXPECT_EQ(c.verdict, Verdict::unclear);
    EXPECT_NE(c.notes.at(0).find("unstable"), std::string::npos);
    EXPECT_EQ(check_exit_code(r), exit_ok);
}

TEST(CheckRunner, ATenPercentSpeedupIsFasterAndPasses) {
    ScriptedMeasurer m(first_then(0.9, 0.9));
    const auto r = run_check(one_case_baseline(), k_device_key, m, options());
    EXPECT_EQ(r.cases[0].verdict, Verdict::faster);
    EXPECT_EQ(m.calls.size(), 1u);
    EXPECT_EQ(check_exit_code(r), exit_ok);
}

TEST(CheckRunner, ADeviceMismatchIsRefusedWithAMessageNamingTheDifference) {
    ScriptedMeasurer m(first_then(1.0, 1.0));
    std::string other = k_device_key;
    other.replace(other.find("drv 13.0"), 8, "drv 13.1");
    try {
        run_check(one_case_baseline(), other, m, options());
        FAIL() << "expected a refusal";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        const std::string what = e.what();
        EXPECT_NE(what.find("results/baselines/nvidia-h100-80gb-hbm3-sm_90.json"), std::string::npos) << what;
        EXPECT_NE(what.find("\"drv 13.0\" (baseline) vs \"drv 13.1\" (this device)"), std::string::npos) << what;
        EXPECT_NE(what.find("--force"), std::string::npos) << what;
    }
    EXPECT_TRUE(m.calls.empty());
}

TEST(CheckRunner, ADeviceMismatchIsComparedWhenForced) {
    ScriptedMeasurer m(first_then(1.0, 1.0));
    CheckOptions o = options();
    o.force = true;
    const auto r = run_check(one_case_baseline(), "another GPU", m, o);
    EXPECT_TRUE(r.device_mismatch_forced);
    EXPECT_EQ(r.cases.size(), 1u);
    EXPECT_EQ(r.current_device_key, "another GPU");
}

// The baseline's GPU and this one: one key, a launch floor of 3.23 us against 5.02 us (two H100 host kinds).
DeviceInfo calibrated(double launch_floor_us) {
    DeviceInfo d;
    d.copy_gbps = 2995;
    d.launch_floor_us = launch_floor_us;
    d.host = "this-host";
    return d;
}

Baseline calibrated_baseline() {
    Baseline b = one_case_baseline();
    b.device.copy_gbps = 3005;  // within noise of 2995
    b.device.launch_floor_us = 3.23;
    b.device.host = "baseline-host";
    return b;
}

TEST(CheckRunner, AGpuOfTheSameKeyThatBehavesApartIsRefusedUnlessForced) {
    ScriptedMeasurer m(first_then(1.0, 1.0));
    CheckOptions o = options();
    o.current_calibration = calibrated(5.02);
    try {
        run_check(calibrated_baseline(), k_device_key, m, o);
        FAIL() << "expected a refusal";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        const std::string what = e.what();
        EXPECT_NE(what.find("launch floor"), std::string::npos) << what;
        EXPECT_NE(what.find("baseline-host"), std::string::npos) << what;
        EXPECT_NE(what.find("--force"), std::string::npos) << what;
    }
    EXPECT_TRUE(m.calls.empty());
    o.force = true;
    ScriptedMeasurer forced(first_then(1.0, 1.0));
    const auto r = run_check(calibrated_baseline(), k_device_key, forced, o);
    EXPECT_NE(r.calibration_mismatch_forced.find("launch floor"), std::string::npos);
    EXPECT_EQ(r.cases.size(), 1u);
}

TEST(CheckRunner, AGpuThatBehavesAlikeOrABaselineWithoutCalibrationIsCompared) {
    ScriptedMeasurer m(first_then(1.0, 1.0));
    CheckOptions o = options();
    o.current_calibration = calibrated(3.25);
    EXPECT_TRUE(run_check(calibrated_baseline(), k_device_key, m, o).calibration_mismatch_forced.empty());
    o.current_calibration = calibrated(5.02);  // an old baseline file carries no calibration: nothing to compare
    ScriptedMeasurer old(first_then(1.0, 1.0));
    EXPECT_EQ(run_check(one_case_baseline(), k_device_key, old, o).cases.size(), 1u);
}

TEST(CheckRunner, SaysWhetherItRunsOnTheBaselinesOwnGpuOrAnother) {
    CheckOptions o = options();
    o.current_calibration = calibrated(3.25);
    o.current_calibration->uuid = "GPU-bbbb";
    Baseline b = calibrated_baseline();
    ScriptedMeasurer old(first_then(1.0, 1.0));
    EXPECT_EQ(run_check(b, k_device_key, old, o).gpu_relation, "");  // a file without the GPU's UUID: not said
    b.device.gpu_uuid = "GPU-aaaa";
    ScriptedMeasurer other(first_then(1.0, 1.0));
    EXPECT_EQ(run_check(b, k_device_key, other, o).gpu_relation,
              "another GPU (baseline GPU-aaaa on baseline-host, this GPU-bbbb on this-host)");
    b.device.gpu_uuid = "GPU-bbbb";
    ScriptedMeasurer same(first_then(1.0, 1.0));
    const CheckReport r = run_check(b, k_device_key, same, o);
    EXPECT_EQ(r.gpu_relation, "the baseline's own GPU (GPU-bbbb)");
    EXPECT_NE(format_check_table(r).find("on the baseline's own GPU (GPU-bbbb)\n"), std::string::npos);
}

TEST(CheckRunner, ACorrectnessFailureFailsTheCheckAndTheOtherCasesStillRun) {
    Rng rng(3);
    Baseline b = empty_baseline();
    b.cases.push_back(make_case(rng, "rmsnorm", 4096, k_us, 0.01));
    b.cases.push_back(make_case(rng, "softmax", 4096, k_us, 0.01));
    FakeMeasurer m(4);
    m.break_config(b.cases[0].id(), b.cases[0].config_key, Status::invalid_result);
    m.set(b.cases[1].id(), b.cases[1].config_key, k_us, 0.01);
    const auto r = run_check(b, k_device_key, m, options());
    ASSERT_EQ(r.cases.size(), 2u);
    EXPECT_EQ(r.cases[0].verdict, Verdict::failed);
    EXPECT_EQ(r.cases[0].failure, Status::invalid_result);
    EXPECT_NE(r.cases[0].failure_message.find("differ from the reference"), std::string::npos);
    EXPECT_EQ(r.cases[0].first_verdict, Verdict::failed);
    EXPECT_NEAR(r.cases[0].decisive().baseline_p50_us, k_us, 1.0);  // what it had to match is still shown
    EXPECT_NE(r.cases[1].verdict, Verdict::failed);
    EXPECT_EQ(check_exit_code(r), exit_failure);
}

TEST(CheckRunner, OtherMeasurerErrorsStopTheCheck) {
    Baseline b = one_case_baseline();
    FakeMeasurer m(4);  // knows no kernel: throws Error(internal)
    EXPECT_THROW(run_check(b, k_device_key, m, options()), Error);
}

TEST(CheckRunner, ADifferentConfigurationThatWinsIsMeasuredAndReported) {
    Baseline b = one_case_baseline();
    const auto& c = b.cases[0];
    FakeMeasurer m(5);
    m.set(c.id(), c.config_key, k_us, 0.01);
    m.set(c.id(), "BLOCK=512,VEC=8", k_us * 0.85, 0.01);
    m.set_best(c.id(), "BLOCK=512,VEC=8");
    const auto r = run_check(b, k_device_key, m, options(3));
    const CaseResult& row = r.cases[0];
    EXPECT_EQ(row.verdict, Verdict::same);  // the verdict stays about the recorded configuration
    ASSERT_TRUE(row.better_config);
    EXPECT_EQ(*row.better_config, "BLOCK=512,VEC=8");
    EXPECT_TRUE(row.better_config_wins);
    ASSERT_TRUE(row.better_config_comparison);
    EXPECT_NEAR(row.better_config_comparison->ratio, 0.85, 0.03);
    EXPECT_NE(row.notes.at(0).find("a different configuration now wins: BLOCK=512,VEC=8"), std::string::npos);
    // Both configurations measured in the same rounds, in alternating order.
    const std::string cur = "measure " + c.id() + " BLOCK=256,VEC=8", alt = "measure " + c.id() + " BLOCK=512,VEC=8";
    EXPECT_EQ(m.calls, (std::vector<std::string>{cur, cur, alt, alt, cur, cur, alt}));
    EXPECT_EQ(check_exit_code(r), exit_ok);
}

TEST(CheckRunner, AProposedConfigurationThatIsNotFasterIsNotCalledAWinner) {
    Baseline b = one_case_baseline();
    const auto& c = b.cases[0];
    FakeMeasurer m(6);
    m.set(c.id(), c.config_key, k_us, 0.01);
    m.set(c.id(), "BLOCK=512,VEC=8", k_us, 0.01);
    m.set_best(c.id(), "BLOCK=512,VEC=8");
    const auto row = run_check(b, k_device_key, m, options(3)).cases[0];
    EXPECT_FALSE(row.better_config_wins);
    EXPECT_NE(row.notes.at(0).find("not measurably faster"), std::string::npos);
}

TEST(CheckRunner, ABrokenProposedConfigurationIsNotedWithoutFailingTheCase) {
    Baseline b = one_case_baseline();
    const auto& c = b.cases[0];
    FakeMeasurer m(6);
    m.set(c.id(), c.config_key, k_us, 0.01);
    m.break_config(c.id(), "BLOCK=512,VEC=8");
    m.set_best(c.id(), "BLOCK=512,VEC=8");
    const auto r = run_check(b, k_device_key, m, options(3));
    EXPECT_NE(r.cases[0].verdict, Verdict::failed);
    EXPECT_FALSE(r.cases[0].better_config_wins);
    EXPECT_NE(r.cases[0].notes.at(0).find("the proposed configuration BLOCK=512,VEC=8 fails"), std::string::npos);
    EXPECT_EQ(check_exit_code(r), exit_ok);
}

TEST(CheckRunner, AnUnconfirmedProposalIsReportedWithoutMeasuringIt) {
    Baseline b = one_case_baseline();
    const auto& c = b.cases[0];
    FakeMeasurer m(6);
    m.set(c.id(), c.config_key, k_us, 0.01);
    m.set_best(c.id(), "BLOCK=512,VEC=8");
    CheckOptions o = options();
    o.confirm_alternatives = false;
    const auto row = run_check(b, k_device_key, m, o).cases[0];
    EXPECT_TRUE(row.better_config_wins);
    EXPECT_EQ(m.calls.size(), 1u);
    EXPECT_NE(row.notes.at(0).find("now wins"), std::string::npos);
}

TEST(CheckRunner, ASlowdownWithAnUnchangedSourceSaysTheCodeIsNotTheCause) {
    Baseline b = one_case_baseline();
    const auto& c = b.cases[0];
    FakeMeasurer m(7, NoiseModel{0, 0, 0, 0});
    m.set(c.id(), c.config_key, k_us * 1.2, 0.01);
    m.set_source_hash(c.id(), c.source_hash);
    const auto row = run_check(b, k_device_key, m, options()).cases[0];
    EXPECT_EQ(row.verdict, Verdict::slower);
    EXPECT_EQ(row.source_changed, false);
    EXPECT_NE(row.notes.back().find("kernel source unchanged"), std::string::npos);
}

TEST(CheckRunner, ACaseWhoseKernelSourceChangedSaysSo) {
    Baseline b = one_case_baseline();
    const auto& c = b.cases[0];
    FakeMeasurer m(7, NoiseModel{0, 0, 0, 0});
    m.set(c.id(), c.config_key, k_us, 0.01);
    m.set_source_hash(c.id(), "another-hash");
    const auto row = run_check(b, k_device_key, m, options()).cases[0];
    EXPECT_EQ(row.source_changed, true);
    EXPECT_NE(row.notes.back().find("kernel source changed since the baseline"), std::string::npos);
}

TEST(CheckRunner, OpsSelectsTheCasesToCheck) {
    Rng rng(3);
    Baseline b = empty_baseline();
    b.cases.push_back(make_case(rng, "rmsnorm", 4096, k_us, 0.01));
    b.cases.push_back(make_case(rng, "softmax", 4096, k_us, 0.01));
    FakeMeasurer m(4);
    m.set(b.cases[1].id(), b.cases[1].config_key, k_us, 0.01);
    CheckOptions o = options();
    o.ops = {"softmax"};
    const auto r = run_check(b, k_device_key, m, o);
    ASSERT_EQ(r.cases.size(), 1u);
    EXPECT_EQ(r.cases[0].op, "softmax");
}

TEST(CheckRunner, AnOpTheBaselineDoesNotHaveIsBadInput) {
    FakeMeasurer m(4);
    CheckOptions o = options();
    o.ops = {"layernorm"};
    try {
        run_check(one_case_baseline(), k_device_key, m, o);
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_NE(std::string(e.what()).find("it has: rmsnorm"), std::string::npos) << e.what();
    }
}

TEST(CheckRunner, RefusesZeroRemeasurementRounds) {
    FakeMeasurer m(4);
    EXPECT_THROW(run_check(one_case_baseline(), k_device_key, m, options(0)), Error);
}

TEST(CheckRunner, ReportsEachCaseAsItIsDecided) {
    ScriptedMeasurer m(first_then(1.0, 1.0));
    CheckOptions o = options();
    std::vector<std::string> seen;
    o.on_case = [&](const CaseResult& c) { seen.push_back(c.id); };
    run_check(one_case_baseline(), k_device_key, m, o);
    EXPECT_EQ(seen, (std::vector<std::string>{"rmsnorm/fwd bf16:M=4096,H=8192"}));
}

TEST(RecordBaselineSamples, PoolsSessionsTakenRoundRobinOverTheCases) {
    Rng rng(3);
    Baseline b = empty_baseline();
    b.cases.push_back(make_case(rng, "rmsnorm", 4096, k_us, 0.01));
    b.cases.push_back(make_case(rng, "softmax", 4096, k_us, 0.01));
    FakeMeasurer m(4);
    for (const auto& c : b.cases) m.set(c.id(), c.config_key, 20.0, 0.01);
    record_baseline_samples(b, m, 3, 40);
    const std::string a = "measure " + b.cases[0].id() + " BLOCK=256,VEC=8";
    const std::string s = "measure " + b.cases[1].id() + " BLOCK=256,VEC=8";
    EXPECT_EQ(m.calls, (std::vector<std::string>{a, s, a, s, a, s}));
    EXPECT_EQ(b.cases[0].samples_us.size(), 120u);
    EXPECT_EQ(b.cases[0].stats.n, 120);
    EXPECT_NEAR(b.cases[0].stats.p50, 20.0, 1.0);
    EXPECT_EQ(b.method.sessions, 3);
    EXPECT_EQ(b.method.min_samples, 40);
}

// A decode-size case is recorded by kernel time when the measurer says a tuning ranks it so; measure() sees it.
TEST(RecordBaselineSamples, TakesEachCasesTimerFromTheMeasurer) {
    struct KernelTimed : FakeMeasurer {
        using FakeMeasurer::FakeMeasurer;
        std::vector<std::string> timers;
        std::string timer_for(const BaselineCase& c) override { return c.op == "rmsnorm" ? "kernel" : "events"; }
        std::vector<double> measure(const BaselineCase& c, const std::string& config, int n) override {
            timers.push_back(c.timer);
            return FakeMeasurer::measure(c, config, n);
        }
    };
    Rng rng(3);
    Baseline b = empty_baseline();
    b.cases.push_back(make_case(rng, "rmsnorm", 16, k_us, 0.01));
    b.cases.push_back(make_case(rng, "softmax", 4096, k_us, 0.01));
    KernelTimed m(4);
    for (const auto& c : b.cases) m.set(c.id(), c.config_key, 20.0, 0.01);
    record_baseline_samples(b, m, 1, 10);
    EXPECT_EQ(b.cases[0].timer, "kernel");
    EXPECT_EQ(b.cases[1].timer, "events");
    EXPECT_EQ(m.timers, (std::vector<std::string>{"kernel", "events"}));
}

}  // namespace
}  // namespace ktune
