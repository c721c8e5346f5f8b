#pragma once
// Shared by the report tests: a hand-built report, a per-test temporary directory, result and peer records.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "core/error.hpp"
#include "reports/report_data.hpp"
#include "results/store.hpp"
#include "tests/common/temp_dir.hpp"

namespace ktune::test {

// Deterministic samples around p50 with a tail: 20 values, the largest 4 % above p50.
inline std::vector<double> samples_around(double p50) {
    std::vector<double> s;
    for (int i = 0; i < 20; ++i) s.push_back(p50 * (1.0 + 0.002 * std::sin(i * 1.7) + (i == 7 ? 0.04 : 0.0)));
    return s;
}

inline SampleStats stats_of(double p50) {
    SampleStats s;
    s.n = 20;
    s.min = p50 * 0.997;
    s.p50 = p50;
    s.p95 = p50 * 1.01;
    s.p99 = p50 * 1.035;
    s.max = p50 * 1.04;
    s.mean = p50 * 1.002;
    s.stddev = p50 * 0.009;
    s.iqr = p50 * 0.003;
    s.median_ci_rel = 0.004;
    return s;
}

inline PeerTiming peer_timing(const std::string& label, double p50, double ktune_p50, bool with_samples) {
    PeerTiming p;
    p.label = label;
    p.impl = label;
    p.method = "cold_l2_events";
    p.p50_us = p50;
    p.p95_us = p50 * 1.02;
    p.p99_us = p50 * 1.05;
    p.mean_us = p50 * 1.01;
    p.n = with_samples ? 20 : 100;
    if (with_samples) p.samples_us = samples_around(p50);
    p.source = "bench/peers/h100_rmsnorm.json";
    p.environment_json = R"({"torch":"2.5.1+cu124","triton":"3.1.0","cuda_graphs":false})";
    p.speedup = p50 / ktune_p50;
    return p;
}

inline ProblemRow row(Dtype dtype, std::int64_t m, std::int64_t h, const std::string& config, double p50,
                      double copy_gbps) {
    ProblemRow r;
    r.problem = Problem{dtype, {{"M", m}, {"H", h}}};
    r.config_key = config;
    r.stats = stats_of(p50);
    r.samples_us = samples_around(p50);
    r.bytes_moved = 2.0 * static_cast<double>(m * h) * dtype_bytes(dtype) + static_cast<double>(h) * dtype_bytes(dtype);
    r.gbps = r.bytes_moved / (p50 * 1e-6) / 1e9;
    if (copy_gbps > 0) r.pct_of_copy = 100 * r.gbps / copy_gbps;
    return r;
}

// The same-size rooflines of a row: the times of the best copy/fwd and copy/read of its bytes (NaN: not measured).
inline void set_floors(ProblemRow& r, double copy_floor_us, double read_floor_us) {
    r.copy_floor_us = copy_floor_us;
    r.read_floor_us = read_floor_us;
    if (std::isfinite(copy_floor_us)) r.pct_of_copy_floor = 100 * copy_floor_us / r.stats.p50;
}

// Two devices: an H100 with measured ceilings and three peers (one without samples, one missing a problem), and a
// device without ceilings, name, peers or copy results. The H100's rows have same-size copy floors, the fp32 one no
// read floor.
inline ReportData sample_report() {
    ReportData d;
    d.title = "ktune report";
    d.generated_at = "2025-06-01T12:00:00Z";
    d.database = "results/ktune.db";

    ReportDevice h100;
    h100.key = "NVIDIA H100 80GB HBM3|sm_90|132SM|L2 50MiB|HBM 79GiB@2619MHz|drv 13.0|cuda 13.0|nvrtc 13.0";
    h100.name = "NVIDIA H100 80GB HBM3";
    h100.arch = "sm_90";
    h100.sm_count = 132;
    h100.memory_bytes = 85'520'809'984;
    h100.driver_version = "13.0";
    h100.cuda_version = "13.0";
    h100.copy_gbps = 3012.5;
    h100.launch_floor_us = 2.1;
    ReportDevice bare;
    bare.key = "dev-without-ceilings";
    d.devices = {h100, bare};

    OpSection s;
    s.op = "rmsnorm";
    s.variant = "fwd";
    s.device = 0;
    s.source_path = "kernels/rmsnorm/rmsnorm_fwd.cuh";
    s.source_hash = "deadbeefcafe0123456789";
    s.peer_labels = {"liger", "torch_compile", "torch_eager"};
    s.unmatched_peers = 2;

    ProblemRow a = row(Dtype::bf16, 4096, 4096, "BLOCK=256,VEC=8,UNROLL=2,ROWS_PER_BLOCK=1", 24.5, h100.copy_gbps);
    a.peers = {peer_timing("liger", 31.0, 24.5, true), peer_timing("torch_compile", 30.2, 24.5, true),
               peer_timing("torch_eager", 70.4, 24.5, false)};
    a.best_peer = "torch_compile";
    set_floors(a, 22.8, 14.1);
    ProblemRow b = row(Dtype::bf16, 16384, 8192, "BLOCK=512,VEC=8,UNROLL=4,ROWS_PER_BLOCK=1", 185.0, h100.copy_gbps);
    b.time_cap_hit = true;
    b.peers = {peer_timing("torch_compile", 181.0, 185.0, true), peer_timing("torch_eager", 520.0, 185.0, false)};
    b.best_peer = "torch_compile";
    set_floors(b, 181.2, 95.0);
    ProblemRow c = row(Dtype::fp32, 4096, 4096, "BLOCK=256,VEC=4,UNROLL=4,ROWS_PER_BLOCK=1", 46.8, h100.copy_gbps);
    c.peers = {peer_timing("liger", 52.0, 46.8, true)};
    c.best_peer = "liger";
    set_floors(c, 44.9, k_report_nan);
    s.rows = {a, b, c};

    OpSection t;
    t.op = "rmsnorm";
    t.variant = "fwd";
    t.device = 1;
    t.source_path = "kernels/rmsnorm/rmsnorm_fwd.cuh";
    t.source_hash = "deadbeefcafe0123456789";
    t.rows = {row(Dtype::fp16, 1024, 2048, "BLOCK=128,VEC=8,UNROLL=1,ROWS_PER_BLOCK=1", 5.2, 0)};
    d.sections = {s, t};
    UnmatchedPeer u;
    u.op = "rmsnorm";
    u.variant = "fwd";
    u.device_name = h100.name;
    u.problem = Problem{Dtype::bf16, {{"M", 1}, {"H", 4096}}};
    u.impl = "liger";
    u.method = "cold_l2_events";
    u.p50_us = 6.1;
    u.p95_us = 6.4;
    u.p99_us = 7.0;
    u.n = 200;
    u.source = "peers/h100.json";
    UnmatchedPeer v = u;
    v.op = "softmax";
    v.p50_us = v.p95_us = v.p99_us = k_report_nan;  // a peer that gave no times renders as missing
    v.n = 0;
    d.unmatched_peers = {u, v};
    return d;
}

// Each test gets its own empty directory under the system temp directory, removed afterwards.
class TempDirTest : public ::testing::Test {
protected:
    std::string path(const std::string& name) const { return (m_dir.path() / name).string(); }
    std::string write(const std::string& name, const std::string& text) const {
        std::ofstream(path(name), std::ios::binary) << text;
        return path(name);
    }

private:
    TempDir m_dir{"ktune-reports-test"};
};

// The Error thrown by f, or a test failure when it throws none.
inline Error error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e;
    }
    ADD_FAILURE() << "expected a ktune::Error";
    return Error(ErrorCategory::internal, "no error");
}

inline std::size_t count(const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
    return n;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A timed ok result of rmsnorm/fwd with bandwidth `gbps`.
inline ResultRecord result(const std::string& config, const Problem& p, double p50, double gbps,
                           const std::string& device_key = "dev-h100", const std::string& op = "rmsnorm",
                           const std::string& variant = "fwd") {
    ResultRecord r;
    r.kernel = KernelInfo{op, variant, "kernels/" + op + "/" + op + "_" + variant + ".cuh", "hash-1", "", ""};
    r.config_key = config;
    r.problem = p;
    r.device_key = device_key;
    r.measured_at = "2025-01-01T00:00:00Z";
    r.measurement.stats = stats_of(p50);
    r.measurement.samples_us = samples_around(p50);
    r.measurement.gbps = gbps;
    return r;
}

inline PeerRecord peer(const std::string& impl, const Problem& p, double p50,
                       const std::string& device_name = "NVIDIA H100 80GB HBM3",
                       const std::string& method = "cold_l2_events", const std::string& op = "rmsnorm",
                       const std::string& variant = "fwd") {
    PeerRecord r;
    r.op = op;
    r.variant = variant;
    r.problem = p;
    r.device_name = device_name;
    r.impl = impl;
    r.method = method;
    r.p50_us = p50;
    r.p95_us = p50 * 1.02;
    r.p99_us = p50 * 1.05;
    r.n = 20;
    r.samples_us = samples_around(p50);
    r.source = "peers.json";
    return r;
}

}  // namespace ktune::test
