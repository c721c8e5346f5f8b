#pragma once
// Synthetic GPU timings for the check's tests, and a CaseMeasurer that serves them and logs what it was asked.
//
// Noise model, shaped like event-timed kernels on a shared H100:
//  - within a session, samples are lognormal around the session's median with sigma 1 to 3 %;
//  - 2 % of samples are outliers, 20 to 50 % slower (preemption, clock ramps);
//  - every session (one measure() call) has its own median, shifted by up to +-2.5 % (shared GPUs drift).
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tuner/check/baseline.hpp"
#include "tuner/check/check_runner.hpp"
#include "tuner/check/random.hpp"

namespace ktune::test {

using check_random::Rng;

struct NoiseModel {
    double outlier_rate = 0.02;
    double outlier_min = 0.20, outlier_max = 0.50;
    double session_shift = 0.025;  // each session's median moves by U(-shift, +shift)
};

inline std::vector<double> draw_session(Rng& rng, double median_us, double sigma, int n, const NoiseModel& m = {}) {
    const double session_median = median_us * (1.0 + rng.uniform(-m.session_shift, m.session_shift));
    std::vector<double> s;
    s.reserve(std::size_t(n));
    for (int i = 0; i < n; ++i) {
        double x = session_median * std::exp(sigma * rng.normal());
        if (rng.uniform() < m.outlier_rate) x *= 1.0 + rng.uniform(m.outlier_min, m.outlier_max);
        s.push_back(x);
    }
    return s;
}

inline const std::string k_device_key =
    "NVIDIA H100 80GB HBM3|sm_90|132SM|L2 50MiB|HBM3 80GiB@2619MHz|drv 13.0|cuda 13.0|nvrtc 13.0";

inline Baseline empty_baseline() {
    Baseline b;
    b.device = {.key = k_device_key, .name = "NVIDIA H100 80GB HBM3", .arch = "sm_90"};
    b.created_at = "2025-01-31T12:00:00Z";
    b.git_revision = "abc1234";
    b.path = "results/baselines/nvidia-h100-80gb-hbm3-sm_90.json";
    return b;
}

// A case whose samples are `sessions` sessions of `n` samples around `median_us`.
inline BaselineCase make_case(Rng& rng, const std::string& op, std::int64_t m, double median_us, double sigma,
                              int n = 30, int sessions = 1, const NoiseModel& noise = {}) {
    BaselineCase c;
    c.op = op;
    c.variant = "fwd";
    c.problem.dtype = Dtype::bf16;
    c.problem.shape = {{"M", m}, {"H", 8192}};
    c.config_key = "BLOCK=256,VEC=8";
    c.source_hash = "hash-v1";
    c.bytes = 2 * m * 8192 * 2;
    for (int s = 0; s < sessions; ++s) {
        const auto x = draw_session(rng, median_us, sigma, n, noise);
        c.samples_us.insert(c.samples_us.end(), x.begin(), x.end());
    }
    c.refresh_stats();
    return c;
}

// Serves synthetic sessions: the true median of (case, configuration) now, and optionally of the recorded kernel.
class FakeMeasurer : public CaseMeasurer {
public:
    struct Kernel {
        double median_us = 0;
        double sigma = 0.02;
    };

    explicit FakeMeasurer(std::uint64_t seed, NoiseModel noise = {}) : m_rng(seed), m_noise(noise) {}

    // The current code of case `id` at `config` has this true median.
    void set(const std::string& id, const std::string& config, double median_us, double sigma) {
        m_now[id + "|" + config] = {median_us, sigma};
    }
    // measure_recorded() answers for case `id` (A/B mode).
    void set_recorded(const std::string& id, double median_us, double sigma) { m_recorded[id] = {median_us, sigma}; }
    void set_best(const std::string& id, const std::string& config) { m_best[id] = config; }
    void set_source_hash(const std::string& id, const std::string& hash) { m_hash[id] = hash; }
    void break_config(const std::string& id, const std::string& config, Status status = Status::invalid_result) {
        m_broken[id + "|" + config] = status;
    }

    std::vector<double> measure(const BaselineCase& c, const std::string& config, int min_samples) override {
        calls.push_back("measure " + c.id() + " " + config);
        const std::string key = c.id() + "|" + config;
        if (auto b = m_broken.find(key); b != m_broken.end())
            throw CheckCorrectnessError(b->second, "1024 of 4096 outputs differ from the reference", key);
        const auto it = m_now.find(key);
        if (it == m_now.end()) throw Error(ErrorCategory::internal, "FakeMeasurer: no kernel for " + key);
        return draw_session(m_rng, it->second.median_us, it->second.sigma, min_samples, m_noise);
    }

    std::optional<std::string> best_config_now(const BaselineCase& c) override {
        const auto it = m_best.find(c.id());
        return it == m_best.end() ? std::nullopt : std::optional<std::string>(it->second);
    }

    std::optional<std::string> current_source_hash(const BaselineCase& c) override {
        const auto it = m_hash.find(c.id());
        return it == m_hash.end() ? std::nullopt : std::optional<std::string>(it->second);
    }

    std::optional<std::vector<double>> measure_recorded(const BaselineCase& c, int min_samples) override {
        const auto it = m_recorded.find(c.id());
        if (it == m_recorded.end()) return std::nullopt;
        calls.push_back("recorded " + c.id());
        return draw_session(m_rng, it->second.median_us, it->second.sigma, min_samples, m_noise);
    }

    std::vector<std::string> calls;

private:
    Rng m_rng;
    NoiseModel m_noise;
    std::map<std::string, Kernel> m_now, m_recorded;
    std::map<std::string, std::string> m_best, m_hash;
    std::map<std::string, Status> m_broken;
};

}  // namespace ktune::test
