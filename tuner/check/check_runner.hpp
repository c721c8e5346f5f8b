#pragma once
// `ktune check`: measure the current kernels the way the baseline was measured, compare each case against it, and
// decide. The GPU sits behind CaseMeasurer, so the whole procedure runs (and is tested) on synthetic samples.
//
// Per case:
//  1. First session: the current code at the baseline's configuration, compared with the recorded samples
//     (compare_samples). "same" and "faster" are final.
//  2. "slower" and "unclear" are re-measured: `remeasure_rounds` rounds, each measuring, one right after the other on
//     the same GPU, the arms below, in an order that alternates between rounds (A B, B A, A B...) so that a steady
//     drift during the rounds weighs on every arm alike. Each measure() call is one session.
//       current      the current code at the baseline's configuration;
//       reference    a fresh measurement of the baseline configuration: the recorded kernel itself when the measurer
//                    can rebuild the recorded source (measure_recorded), otherwise the current code at that
//                    configuration again;
//       alternative  only when best_config_now() names another configuration: the current code at that one.
//  3. The re-measurement decides, and it alone: a case is "slower" only when the re-measurement says "slower" (a
//     first "slower" that does not reproduce is never final; the first verdict stays in the row).
//
// What the reference arm can and cannot control (the subtle part). Correcting the ratio by the GPU's drift measured
// as (baseline configuration now / baseline recorded) is unsound when the reference runs the current code: when the
// kernel source changed, both arms run the new code, the "drift" contains the regression, and the corrected ratio is
// current-now / reference-now = 1 by construction: every regression would be divided away. A drift is only
// measurable on a kernel whose code did not change. Hence two modes:
//   A/B (measure_recorded available): reference = the recorded kernel. Decisive comparison: reference-now (as
//     baseline) vs current-now. Both arms saw the same GPU states, so the GPU's drift cancels; this is the only
//     comparison that tells code that got slower from a GPU that is slower today. reference-now / recorded is
//     reported as the GPU's drift when it exceeds the threshold.
//   A/A (default): reference = the current code at the baseline configuration, i.e. the same kernel as current.
//     Decisive comparison: recorded vs (current-now + reference-now): 2K fresh sessions average out the
//     session-to-session drift of a shared GPU that one session cannot, and the duration-dependent threshold is the
//     allowance for the drift between the recording session and today (record baselines over several sessions too:
//     record_baseline_samples). The pair is also an A/A test: two measurements of one kernel in the same rounds must
//     agree; when they compare "slower" or "faster" (the whole interval beyond the limit), the GPU is too unstable
//     today to conclude, and the case is "unclear".
//   Alternative: current-now (as baseline) vs alternative-now, paired in the same rounds, so drift cancels. When the
//     alternative is "faster", the row says a different configuration now wins (re-tuning suggested). The case's
//     verdict stays about the baseline's configuration. With confirm_alternatives, a proposed alternative is
//     measured (rounds of current + alternative) even when the first verdict was final.
//   The first session never joins the re-measurement's pools: a replication must not inherit the unlucky drift of
//   the session that raised the doubt. The bootstrap treats pooled samples as independent, so the spread between
//   the 2K sessions is not in the interval; it is part of what the threshold allows for.
//   Measured on synthetic H100-like noise (tests/unit/check/test_check_statistics.cpp): a 10 % slowdown at 50 us is
//   caught in ~98 % of trials; noise alone fails none of 2000; a GPU 8 % slower for the whole check fails ~3 in 4 in
//   A/A mode (it cannot tell) and none in A/B mode.
//
// Correctness: the measurer validates before timing and throws CheckCorrectnessError when the kernel does not
// compile, validate, launch or finish: the case is "failed" and the check fails. Any other exception (no GPU, a dead
// worker) propagates out of run_check: the check could not run, which main reports with its own exit code.
//
// Exit decision (check_exit_code): non-zero only for a reproduced slowdown (a final "slower") or a correctness
// failure. "unclear" never fails a pull request; it is reported (JUnit: skipped).
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "core/error.hpp"
#include "core/types.hpp"
#include "tuner/check/baseline.hpp"
#include "tuner/check/compare.hpp"

namespace ktune {

// The kernel is wrong or broken, not slow. Category compile for Status::compile_error, device otherwise.
class CheckCorrectnessError : public Error {
public:
    CheckCorrectnessError(Status status, std::string message, std::string where = {});
    Status status() const { return m_status; }

private:
    Status m_status;
};

class CaseMeasurer {
public:
    virtual ~CaseMeasurer() = default;

    // One measurement session: at least min_samples timing samples (us) of the CURRENT source of c's kernel at
    // config_key on c.problem, taken with the baseline's method (Baseline::method). Validates before timing; throws
    // CheckCorrectnessError for a kernel that is wrong or broken.
    virtual std::vector<double> measure(const BaselineCase& c, const std::string& config_key, int min_samples) = 0;

    // The configuration that wins now for c's problem, when the adapter knows (a current tuning database, a quick
    // re-tune). nullopt, or c.config_key: nothing to report.
    virtual std::optional<std::string> best_config_now(const BaselineCase&) { return std::nullopt; }

    // The timer a new baseline's case is sampled with (BaselineCase::timer): "kernel" where a tuning ranks c's
    // problem by kernel time, else "events". measure() then times with c.timer.
    virtual std::string timer_for(const BaselineCase&) { return "events"; }

    // The hash of c's kernel source in the current tree, when known: lets the row say whether the code changed.
    virtual std::optional<std::string> current_source_hash(const BaselineCase&) { return std::nullopt; }

    // One session of the RECORDED kernel: c.source_hash's source (e.g. rebuilt from the baseline's git revision) at
    // c.config_key. nullopt: cannot (the default), and the reference arm runs the current source instead (A/A).
    // Asked once per re-measured case; after a nullopt it is not asked again for that case.
    virtual std::optional<std::vector<double>> measure_recorded(const BaselineCase& c, int min_samples) {
        (void)c;
        (void)min_samples;
        return std::nullopt;
    }
};

enum class ReferenceKind {
    none,             // not re-measured
    same_code,        // A/A: the current source at the baseline configuration
    recorded_kernel,  // A/B: the recorded source at the baseline configuration
};
std::string_view reference_kind_name(ReferenceKind k);

struct CaseResult {
    std::string id;  // BaselineCase::id()
    std::string op, variant, problem_key, config_key;

    Verdict verdict = Verdict::unclear;        // final
    Verdict first_verdict = Verdict::unclear;  // of the first session alone
    Comparison first;                          // recorded baseline vs the first session
    std::optional<Comparison> remeasured;      // the re-measurement's decisive comparison (see the header comment)
    ReferenceKind reference = ReferenceKind::none;
    int rounds = 0;                       // re-measurement rounds run (0: none)
    std::optional<Comparison> stability;  // A/A: reference-now (as baseline) vs current-now, same kernel
    std::optional<double> gpu_drift;      // A/B: median(recorded kernel now) / median(recorded samples)

    std::optional<std::string> better_config;            // best_config_now(), when it differs from config_key
    std::optional<Comparison> better_config_comparison;  // current-now (as baseline) vs better-config-now
    bool better_config_wins = false;                     // measured faster, or proposed and not measured

    std::optional<bool> source_changed;  // current_source_hash() vs the recorded one, when both are known
    std::optional<Status> failure;       // set when verdict == failed
    std::string failure_message;
    std::vector<std::string> notes;  // human-readable, shown in every output
    double seconds = 0;              // wall time spent on the case

    // The comparison behind the final verdict: the re-measurement's when there was one.
    const Comparison& decisive() const { return remeasured ? *remeasured : first; }
};

struct CheckReport {
    std::string baseline_path;
    BaselineDevice baseline_device;
    std::string baseline_git_revision, baseline_created_at;
    std::string current_device_key;
    bool device_mismatch_forced = false;  // keys differ and force was given
    // Why this GPU's calibration differs from the baseline's beyond noise (calibration_difference), when it does and
    // force was given; "" otherwise.
    std::string calibration_mismatch_forced;
    // Whether this check runs on the GPU that recorded the baseline or on another (by UUID, where both are known;
    // "" otherwise): "the baseline's own GPU (...)" or "another GPU (baseline ..., this ...)".
    std::string gpu_relation;
    int remeasure_rounds = 0;
    std::vector<CaseResult> cases;  // in baseline order

    int count(Verdict v) const;
    bool passed() const;  // no final "slower", no "failed"
};

struct CheckOptions {
    std::vector<std::string> ops;  // only these ops (empty: all); a name the baseline does not have is bad input
    bool force = false;            // compare even when the device key or its calibration differs from the baseline's
    // This GPU's calibration (DeviceInfo's ceilings), compared with the baseline's where both were measured.
    std::optional<DeviceInfo> current_calibration;
    int min_samples = 30;      // per measurement session
    int remeasure_rounds = 5;  // K; at least 1
    bool confirm_alternatives = true;
    CompareOptions compare;                          // resamples, confidence, seed (mixed with each case's id)
    std::function<void(const CaseResult&)> on_case;  // called after each case's final verdict (progress output)
};

// Throws Error(bad_input) when the device key differs from the baseline's, or its calibration beyond noise, and
// !options.force (the message lists what differs), when an --ops name matches no case, or for invalid options. Measurer
// exceptions other than CheckCorrectnessError propagate.
CheckReport run_check(const Baseline& baseline, const std::string& current_device_key, CaseMeasurer& measurer,
                      const CheckOptions& options = {});

// exit_ok when report.passed(), else exit_failure.
int check_exit_code(const CheckReport& report);

// For `ktune baseline save`: fills samples_us (and stats) of every case of b from `sessions` sessions of
// measure(case, case.config_key, min_samples), round-robin over the cases so that each case's sessions are spread
// over the run; records sessions and min_samples in b.method. CheckCorrectnessError propagates: a broken kernel gets
// no baseline.
void record_baseline_samples(Baseline& b, CaseMeasurer& measurer, int sessions, int min_samples);

}  // namespace ktune
