#pragma once
// A performance baseline: per (op, variant, problem) on one device, the configuration that was best and the raw timing
// samples of it, as a text file committed under results/baselines/ (`ktune baseline save`, read by `ktune check`).
//
// The file is JSON written in a fixed key order with short arrays on one line, so a re-recorded baseline reads well in
// a diff. Raw samples are kept because the check compares distributions, not single numbers; the p50/p95/p99 written
// next to them are for readers and are recomputed from the samples on load.
//
//   {
//     "format_version": 1,
//     "device": {"key": "NVIDIA H100 80GB HBM3|sm_90|132SM|...", "name": "NVIDIA H100 80GB HBM3", "arch": "sm_90",
//                "copy_gbps": 2995.7, "launch_floor_us": 3.232, "launch_floor_cupti_us": 1.216, "host": "gpu-7"},
//     "created_at": "2025-01-31T12:00:00Z",
//     "git_revision": "abc1234",
//     "method": {"cold_l2": true, "clean_flush": true, "timer": "events", "warmup": 2, "min_samples": 30, ...},
//     "cases": [
//       {"op": "rmsnorm", "variant": "fwd",
//        "problem": {"dtype": "bf16", "shape": [["M", 4096], ["H", 8192]], "key": "bf16:M=4096,H=8192"},
//        "config": "BLOCK=256,VEC=8", "source_hash": "9f2c...", "bytes": 134217728,  (and "timer": "kernel" where
//        the samples are CUPTI kernel durations: a decode-size case)
//        "n": 90, "p50_us": 50.112, "p95_us": 51.2, "p99_us": 58.9, "gbps": 2678.4,
//        "samples_us": [50.101, 50.13, ...]}
//     ]
//   }
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/measurement.hpp"
#include "core/types.hpp"

namespace ktune {

// Files with a larger version were written by a newer ktune and are refused rather than misread.
inline constexpr int k_baseline_format_version = 1;

struct BaselineDevice {
    std::string key{};   // make_device_key(): the comparison is refused when the current device's key differs
    std::string name{};  // "NVIDIA H100 80GB HBM3"
    std::string arch{};  // "sm_90"
    // The calibration of the GPU the baseline was recorded on (DeviceInfo's; 0 or "" when not recorded, as in files
    // from before it was): two GPUs of one key can behave apart, and `ktune check` refuses such a pair unless forced.
    double copy_gbps = 0;
    double launch_floor_us = 0;
    double launch_floor_cupti_us = 0;
    std::string host{};
    // The recording GPU's UUID ("" in older files): host names repeat ("vm", "localhost"), so a check says by this
    // whether it runs on the baseline's own GPU or another.
    std::string gpu_uuid{};
};

// How the samples were taken; `ktune check` measures the same way.
struct BaselineMethod {
    bool cold_l2 = true;
    bool clean_flush = true;  // wire::TimingOptions::clean_flush; files without it were measured with a dirty flush
    std::string timer = "events";  // "events" (CUDA events), "cupti", "graph"
    int warmup = 2;
    int min_samples = 30;
    int max_samples = 2000;
    double target_rel = 0.01;
    double time_cap_s = 1.0;
    int sessions = 3;  // measurement sessions pooled into samples_us (see record_baseline_samples)
};

struct BaselineCase {
    std::string op, variant;
    Problem problem;
    std::string kernel;  // the alternative that was best, in a space of several kernels ("" otherwise)
    // What the samples time: "events" (CUDA events; files from before this field), or "kernel" (CUPTI's kernel
    // duration) where the tuning ranks by it, at decode sizes, whose event time is mostly the launch path.
    std::string timer = "events";
    std::string config_key;          // Config::key() of the configuration that was best
    std::string source_hash;         // KernelInfo::source_hash of the kernel that was measured
    std::int64_t bytes = 0;          // bytes the op must move (0: unknown); gives GB/s
    std::vector<double> samples_us;  // raw, in measurement order
    SampleStats stats;               // of samples_us: refresh_stats() after changing them

    // "rmsnorm/fwd bf16:M=4096,H=8192" ("rmsnorm bf16:..." without a variant): unique within a baseline.
    std::string id() const;
    double gbps() const;  // bytes / p50, 0 when unknown
    void refresh_stats();
};

struct Baseline {
    int format_version = k_baseline_format_version;
    BaselineDevice device;
    std::string created_at;    // ISO-8601 UTC
    std::string git_revision;  // of the tree the kernels were built from
    BaselineMethod method;
    std::vector<BaselineCase> cases;

    std::string path;  // where it was read from (for messages); not written
};

// Parses a baseline. `origin` names the text in errors (a path). Throws Error(bad_input) naming the origin and the
// JSON field ("results/baselines/h100.json: cases[3].samples_us[7]: ...") for malformed files, unknown dtypes,
// non-positive or non-finite samples, duplicate cases, a problem key that disagrees with its dtype and shape, and a
// format version newer than k_baseline_format_version.
Baseline parse_baseline(std::string_view text, const std::string& origin);
Baseline load_baseline(const std::string& path);  // Error(bad_input) when unreadable; sets Baseline::path

// The file's text. Samples and percentiles are rounded to 1 ns, GB/s to 0.01: far below the timer's resolution.
// Throws Error(bad_input) for a case with no samples or non-finite ones (nothing is written).
std::string format_baseline(const Baseline& b);
// Writes format_baseline() to `path` through a temporary file and a rename, creating missing parent folders.
void save_baseline(const Baseline& b, const std::string& path);

// A file name for a device's baseline: "nvidia-h100-80gb-hbm3-sm_90.json" (lower case, [a-z0-9_-] only).
std::string baseline_file_name(const BaselineDevice& d);

}  // namespace ktune
