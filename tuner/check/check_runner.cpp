#include "tuner/check/check_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "core/stats.hpp"
#include "tuner/check/random.hpp"

namespace ktune {

CheckCorrectnessError::CheckCorrectnessError(Status status, std::string message, std::string where)
    : Error(status == Status::compile_error ? ErrorCategory::compile : ErrorCategory::device, std::move(message),
            std::move(where)),
      m_status(status) {}

std::string_view reference_kind_name(ReferenceKind k) {
    switch (k) {
        case ReferenceKind::none:
            return "none";
        case ReferenceKind::same_code:
            return "same code (A/A)";
        case ReferenceKind::recorded_kernel:
            return "recorded kernel (A/B)";
    }
    return "?";
}

int CheckReport::count(Verdict v) const {
    return int(std::count_if(cases.begin(), cases.end(), [v](const CaseResult& c) { return c.verdict == v; }));
}

bool CheckReport::passed() const { return count(Verdict::slower) == 0 && count(Verdict::failed) == 0; }

int check_exit_code(const CheckReport& report) { return report.passed() ? exit_ok : exit_failure; }

namespace {

std::vector<std::string> split_key(const std::string& key) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (;;) {
        const auto bar = key.find('|', start);
        parts.push_back(key.substr(start, bar - start));
        if (bar == std::string::npos) return parts;
        start = bar + 1;
    }
}

std::string describe_key_difference(const std::string& recorded, const std::string& current) {
    const auto a = split_key(recorded), b = split_key(current);
    if (a.size() != b.size()) return fmt::format("baseline \"{}\", this device \"{}\"", recorded, current);
    std::vector<std::string> diffs;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i] != b[i]) diffs.push_back(fmt::format("\"{}\" (baseline) vs \"{}\" (this device)", a[i], b[i]));
    return fmt::format("{}", fmt::join(diffs, ", "));
}

// Two GPUs of one key can behave apart (one H100 host kind showed a launch floor of 3.23 us, another 4.93-5.15 us):
// a baseline from the other kind then reads as a slowdown of every small kernel.
void check_calibration(const Baseline& b, const std::optional<DeviceInfo>& current, bool force, CheckReport& report) {
    if (!current) return;
    DeviceInfo recorded;
    recorded.copy_gbps = b.device.copy_gbps;
    recorded.launch_floor_us = b.device.launch_floor_us;
    recorded.launch_floor_cupti_us = b.device.launch_floor_cupti_us;
    const std::string why = calibration_difference(recorded, *current);
    if (why.empty()) return;
    const std::string where =
        fmt::format("the baseline's GPU{} and this one{}", b.device.host.empty() ? "" : " (host " + b.device.host + ")",
                    current->host.empty() ? "" : " (host " + current->host + ")");
    if (force) {
        report.calibration_mismatch_forced = fmt::format("{}: {}", where, why);
        return;
    }
    throw Error(ErrorCategory::bad_input,
                fmt::format("{} share a device key but do not behave alike: {}. Their timings are not comparable: "
                            "record a baseline on this host, or pass --force to compare anyway",
                            where, why),
                b.path.empty() ? std::string("baseline") : b.path);
}

void check_device(const Baseline& b, const std::string& current_key, bool force, CheckReport& report) {
    if (b.device.key == current_key) return;
    if (force) {
        report.device_mismatch_forced = true;
        return;
    }
    throw Error(ErrorCategory::bad_input,
                fmt::format("the baseline was recorded on another device: {}. Timings from different devices are not "
                            "comparable: record a baseline on this device (ktune baseline save --out "
                            "results/baselines/<device>.json) or pass --force to compare anyway",
                            describe_key_difference(b.device.key, current_key)),
                b.path.empty() ? std::string("baseline") : b.path);
}

void check_samples(const std::vector<double>& s, const std::string& id, const char* what) {
    if (s.empty()) throw Error(ErrorCategory::internal, fmt::format("the measurer returned no samples ({})", what), id);
    for (double x : s)
        if (!std::isfinite(x) || x <= 0)
            throw Error(ErrorCategory::internal,
                        fmt::format("the measurer returned a sample that is not a positive duration: {} ({})", x, what),
                        id);
}

void append(std::vector<double>& pool, const std::vector<double>& s) { pool.insert(pool.end(), s.begin(), s.end()); }

double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return percentile_sorted(v, 0.5);
}

// The stats of a case built in memory may not have been refreshed: trust them only when they describe the samples.
double recorded_median(const BaselineCase& c) {
    if (c.stats.n == std::int64_t(c.samples_us.size()) && c.stats.p50 > 0) return c.stats.p50;
    return median_of(c.samples_us);
}

std::string percent(double ratio) { return fmt::format("{:+.1f} %", (ratio - 1.0) * 100.0); }

enum class Arm { current, reference, alternative };

// Runs one case; CheckCorrectnessError from the current arm escapes to the caller, which marks the case failed.
class CaseCheck {
public:
    CaseCheck(const BaselineCase& c, CaseMeasurer& m, const CheckOptions& o, CaseResult& row)
        : m_case(c), m_measurer(m), m_options(o), m_row(row) {
        m_seed = check_random::mix_seed(o.compare.seed, check_random::hash_name(c.id()));
    }

    void run() {
        if (const auto h = m_measurer.current_source_hash(m_case); h && !m_case.source_hash.empty())
            m_row.source_changed = *h != m_case.source_hash;
        if (auto alt = m_measurer.best_config_now(m_case); alt && !alt->empty() && *alt != m_case.config_key)
            m_row.better_config = *alt;

        const auto first = measure_current();
        m_row.first = compare_samples(m_case.samples_us, first, stage(1));
        m_row.first_verdict = m_row.first.verdict;
        m_row.verdict = m_row.first_verdict;
        // The first session stays out of the re-measurement's pools: a replication must be independent of the
        // session that raised the doubt, or it inherits that session's unlucky drift.

        const bool remeasure = m_row.first_verdict == Verdict::slower || m_row.first_verdict == Verdict::unclear;
        const bool measure_alt = m_row.better_config && (remeasure || m_options.confirm_alternatives);
        std::vector<Arm> arms;
        if (remeasure) arms = {Arm::current, Arm::reference};
        if (measure_alt) {
            if (arms.empty()) arms.push_back(Arm::current);
            arms.push_back(Arm::alternative);
        }
        if (!arms.empty()) run_rounds(arms);
        if (remeasure) decide_remeasured();
        if (m_row.better_config) judge_alternative(measure_alt);
        if (m_row.verdict == Verdict::slower && m_row.source_changed == false)
            m_row.notes.push_back(
                "kernel source unchanged since the baseline: the slowdown comes from the GPU, driver, "
                "toolchain or harness");
        if (m_row.source_changed == true)
            m_row.notes.push_back("kernel source changed since the baseline (its sources, includes or launch)");
    }

private:
    CompareOptions stage(std::uint64_t k) const {
        CompareOptions c = m_options.compare;
        c.seed = check_random::mix_seed(m_seed, k);
        return c;
    }

    std::vector<double> measure_current() {
        auto s = m_measurer.measure(m_case, m_case.config_key, m_options.min_samples);
        check_samples(s, m_case.id(), "current");
        return s;
    }

    void measure_reference() {
        if (m_row.reference == ReferenceKind::none) {
            try {
                if (auto s = m_measurer.measure_recorded(m_case, m_options.min_samples)) {
                    check_samples(*s, m_case.id(), "recorded kernel");
                    m_row.reference = ReferenceKind::recorded_kernel;
                    append(m_reference, *s);
                    return;
                }
            } catch (const CheckCorrectnessError& e) {
                m_row.notes.push_back(
                    fmt::format("the recorded kernel cannot be measured today ({}): compared "
                                "against the current code at the baseline configuration",
                                e.what()));
            }
            m_row.reference = ReferenceKind::same_code;
        }
        if (m_row.reference == ReferenceKind::recorded_kernel) {
            auto s = m_measurer.measure_recorded(m_case, m_options.min_samples);
            if (!s) throw Error(ErrorCategory::internal, "measure_recorded() stopped answering mid-way", m_case.id());
            check_samples(*s, m_case.id(), "recorded kernel");
            append(m_reference, *s);
        } else {
            append(m_reference, measure_current());
        }
    }

    void measure_alternative() {
        if (!m_alternative_ok) return;
        try {
            auto s = m_measurer.measure(m_case, *m_row.better_config, m_options.min_samples);
            check_samples(s, m_case.id(), "alternative configuration");
            append(m_alternative, s);
        } catch (const CheckCorrectnessError& e) {
            // The proposal is wrong, not the kernel under check.
            m_alternative_ok = false;
            m_row.notes.push_back(
                fmt::format("the proposed configuration {} fails: {}", *m_row.better_config, e.what()));
        }
    }

    void run_rounds(std::vector<Arm> arms) {
        for (int r = 0; r < m_options.remeasure_rounds; ++r) {
            for (const Arm a : arms) {
                switch (a) {
                    case Arm::current:
                        append(m_current, measure_current());
                        break;
                    case Arm::reference:
                        measure_reference();
                        break;
                    case Arm::alternative:
                        measure_alternative();
                        break;
                }
            }
            std::reverse(arms.begin(), arms.end());  // A B, B A, A B...
            ++m_row.rounds;
        }
    }

    void decide_remeasured() {
        if (m_row.reference == ReferenceKind::recorded_kernel) {
            m_row.remeasured = compare_samples(m_reference, m_current, stage(2));
            m_row.verdict = m_row.remeasured->verdict;
            const double drift = median_of(m_reference) / recorded_median(m_case);
            m_row.gpu_drift = drift;
            if (std::abs(drift - 1.0) > m_row.remeasured->threshold)
                m_row.notes.push_back(
                    fmt::format("the recorded kernel runs {} today versus the baseline: the GPU or "
                                "its environment changed; compared against it measured now",
                                percent(drift)));
        } else {
            std::vector<double> pooled = m_current;
            append(pooled, m_reference);
            m_row.remeasured = compare_samples(m_case.samples_us, pooled, stage(2));
            m_row.stability = compare_samples(m_reference, m_current, stage(3));
            m_row.verdict = m_row.remeasured->verdict;
            // Only a confident disagreement counts: an interval that merely straddles the limit is no proof.
            if (m_row.stability->verdict == Verdict::slower || m_row.stability->verdict == Verdict::faster) {
                m_row.verdict = Verdict::unclear;
                m_row.notes.push_back(fmt::format(
                    "the GPU is unstable: two measurements of the same kernel in the same rounds differ by {} "
                    "[{:.3f}, {:.3f}]; re-run on a quieter GPU",
                    percent(m_row.stability->ratio), m_row.stability->ci_lo, m_row.stability->ci_hi));
            }
        }
        if (m_row.first_verdict == Verdict::slower && m_row.verdict != Verdict::slower)
            m_row.notes.push_back(
                fmt::format("the first session said slower ({}); {} interleaved rounds did not "
                            "reproduce it",
                            percent(m_row.first.ratio), m_row.rounds));
        if (m_row.verdict == Verdict::slower)
            m_row.notes.push_back(fmt::format("slowdown reproduced in {} interleaved rounds", m_row.rounds));
    }

    void judge_alternative(bool measured) {
        const std::string& alt = *m_row.better_config;
        if (!measured) {
            m_row.better_config_wins = true;
            m_row.notes.push_back(fmt::format("a different configuration now wins: {} (re-tune)", alt));
            return;
        }
        if (!m_alternative_ok) return;
        std::vector<double> base = m_current;
        if (m_row.reference == ReferenceKind::same_code) append(base, m_reference);  // the same kernel
        m_row.better_config_comparison = compare_samples(base, m_alternative, stage(4));
        const Comparison& c = *m_row.better_config_comparison;
        if (c.verdict == Verdict::faster) {
            m_row.better_config_wins = true;
            m_row.notes.push_back(fmt::format("a different configuration now wins: {} ({} versus {}; re-tune)", alt,
                                              percent(c.ratio), m_case.config_key));
        } else {
            m_row.notes.push_back(
                fmt::format("configuration {} was proposed but is not measurably faster ({})", alt, percent(c.ratio)));
        }
    }

    const BaselineCase& m_case;
    CaseMeasurer& m_measurer;
    const CheckOptions& m_options;
    CaseResult& m_row;
    std::uint64_t m_seed = 0;
    std::vector<double> m_current, m_reference, m_alternative;
    bool m_alternative_ok = true;
};

void validate(const Baseline& b, const CheckOptions& o) {
    if (o.remeasure_rounds < 1)
        throw Error(ErrorCategory::bad_input,
                    fmt::format("{} re-measurement rounds: at least 1 (a slowdown must reproduce before it fails a "
                                "check)",
                                o.remeasure_rounds),
                    "check options");
    if (o.min_samples < 5)
        throw Error(ErrorCategory::bad_input, fmt::format("{} samples per session: at least 5", o.min_samples),
                    "check options");
    if (b.cases.empty())
        throw Error(ErrorCategory::bad_input, "the baseline has no cases", b.path.empty() ? "baseline" : b.path);
    std::set<std::string> ops;
    for (const auto& c : b.cases) ops.insert(c.op);
    for (const auto& op : o.ops)
        if (!ops.count(op))
            throw Error(ErrorCategory::bad_input,
                        fmt::format("the baseline has no case of op \"{}\" (it has: {})", op, fmt::join(ops, ", ")),
                        "--ops");
}

}  // namespace

CheckReport run_check(const Baseline& baseline, const std::string& current_device_key, CaseMeasurer& measurer,
                      const CheckOptions& options) {
    validate(baseline, options);
    CheckReport report;
    report.baseline_path = baseline.path;
    report.baseline_device = baseline.device;
    report.baseline_git_revision = baseline.git_revision;
    report.baseline_created_at = baseline.created_at;
    report.current_device_key = current_device_key;
    report.remeasure_rounds = options.remeasure_rounds;
    check_device(baseline, current_device_key, options.force, report);
    if (const auto& here = options.current_calibration;
        here && !here->uuid.empty() && !baseline.device.gpu_uuid.empty())
        report.gpu_relation = here->uuid == baseline.device.gpu_uuid
                                  ? fmt::format("the baseline's own GPU ({})", here->uuid)
                                  : fmt::format("another GPU (baseline {}{}, this {}{})", baseline.device.gpu_uuid,
                                                baseline.device.host.empty() ? "" : " on " + baseline.device.host,
                                                here->uuid, here->host.empty() ? "" : " on " + here->host);
    if (baseline.device.key == current_device_key)
        check_calibration(baseline, options.current_calibration, options.force, report);

    for (const auto& c : baseline.cases) {
        if (!options.ops.empty() && std::find(options.ops.begin(), options.ops.end(), c.op) == options.ops.end())
            continue;
        CaseResult row;
        row.id = c.id();
        row.op = c.op;
        row.variant = c.variant;
        row.problem_key = c.problem.key();
        row.config_key = c.config_key;
        // Known before anything is measured, so a failed case still shows what it had to match.
        row.first.baseline_p50_us = recorded_median(c);
        row.first.n_baseline = std::int64_t(c.samples_us.size());
        row.first.threshold =
            options.compare.threshold > 0 ? options.compare.threshold : regression_threshold(row.first.baseline_p50_us);
        const auto t0 = std::chrono::steady_clock::now();
        try {
            CaseCheck(c, measurer, options, row).run();
        } catch (const CheckCorrectnessError& e) {
            row.verdict = Verdict::failed;
            if (row.first.n_current == 0) row.first_verdict = Verdict::failed;  // the first session already failed
            row.failure = e.status();
            row.failure_message = e.message();
            row.notes.push_back(fmt::format("{}: {}", status_name(e.status()), e.message()));
        }
        row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        report.cases.push_back(std::move(row));
        if (options.on_case) options.on_case(report.cases.back());
    }
    return report;
}

void record_baseline_samples(Baseline& b, CaseMeasurer& measurer, int sessions, int min_samples) {
    if (sessions < 1 || min_samples < 5)
        throw Error(ErrorCategory::bad_input,
                    fmt::format("{} sessions of {} samples: at least 1 session of 5 samples", sessions, min_samples),
                    "baseline options");
    for (auto& c : b.cases) {
        c.samples_us.clear();
        c.timer = measurer.timer_for(c);
    }
    for (int s = 0; s < sessions; ++s) {
        for (auto& c : b.cases) {
            const auto samples = measurer.measure(c, c.config_key, min_samples);
            check_samples(samples, c.id(), "baseline");
            append(c.samples_us, samples);
        }
    }
    for (auto& c : b.cases) c.refresh_stats();
    b.method.sessions = sessions;
    b.method.min_samples = min_samples;
}

}  // namespace ktune
