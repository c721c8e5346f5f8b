#pragma once
// What a report shows, as plain structs. collect_report_data() (reports/report.hpp) fills them from the results store;
// the renderers see only these (as google/benchmark's reporters see only plain run structs), so each renderer is
// tested with data built by hand.
//
// Numbers that are unknown are NaN (times, bandwidths, speedups) or 0 (device ceilings, flops), and every renderer
// shows them as missing rather than as a number.
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/measurement.hpp"
#include "core/types.hpp"

namespace ktune {

inline constexpr double k_report_nan = std::numeric_limits<double>::quiet_NaN();

struct ReportDevice {
    std::string key;   // the ktune device key (name, arch, SMs, memory, driver and toolkit versions)
    std::string name;  // "NVIDIA H100 80GB HBM3": what peers are matched on
    std::string arch;  // "sm_90"
    int sm_count = 0;
    std::int64_t memory_bytes = 0;
    std::string driver_version, cuda_version;
    double copy_gbps = 0;        // measured device-to-device copy bandwidth (read + write); 0 when never measured
    double launch_floor_us = 0;  // an empty kernel's event-timed duration; 0 when never measured
};

// One peer implementation's timing of one problem.
struct PeerTiming {
    // Column name: the impl, or "impl@method" when the report holds that impl timed with more than one method.
    std::string label;
    std::string impl, method;
    double p50_us = k_report_nan, p95_us = k_report_nan, p99_us = k_report_nan, mean_us = k_report_nan;
    std::int64_t n = 0;
    std::vector<double> samples_us;       // may be empty
    std::string source;                   // the file it was imported from
    std::string environment_json = "{}";  // versions of torch, triton... as the peer file gave them
    // peer p50 / ktune p50 measured the same way: event-timed peers against ktune's event p50, kernel-duration peers
    // (method "cupti_kernel_sum") against ktune's CUPTI p50. Above 1, ktune is faster. NaN: no like-for-like time.
    double speedup = k_report_nan;
};

// ktune's best configuration for one problem, and the peers' timings of the same problem.
struct ProblemRow {
    Problem problem;
    std::string config_key;
    SampleStats stats;                   // of the best configuration (smallest p50 among ok results)
    std::vector<double> samples_us;      // its raw samples, in sampling order
    double cupti_p50_us = k_report_nan;  // its CUPTI kernel-duration p50: what kernel-time peer methods compare with
    bool time_cap_hit = false;           // sampling stopped at the time cap before the median's CI target was met
    double gbps = k_report_nan;          // bytes the op must move / p50
    double bytes_moved = k_report_nan;   // gbps * p50: the store keeps the bandwidth, the op knows the bytes
    double pct_of_copy = k_report_nan;   // 100 * gbps / the device's copy ceiling
    // The same-size rooflines (reports/size_roofline.hpp): the event p50 of the best copy/fwd and copy/read of
    // bytes_moved on the same device, interpolated between the sizes they were tuned at; NaN when the device has no
    // such curve around bytes_moved, and in rows of op copy itself.
    double copy_floor_us = k_report_nan;
    double read_floor_us = k_report_nan;
    double pct_of_copy_floor = k_report_nan;  // 100 * copy_floor_us / p50: how close the op gets to that copy
    double flops = 0;                         // per call; 0 when unknown or irrelevant (see ReportOptions::flops)
    double tflops = k_report_nan;             // flops / p50 / 1e12
    std::vector<PeerTiming> peers;  // in the order of OpSection::peer_labels; a peer without a timing is absent
    std::string best_peer;          // label of the peer with the smallest speedup (the fastest like for like)

    const PeerTiming* peer(std::string_view label) const;  // nullptr when that peer did not time this problem
};

// One op/variant on one device.
struct OpSection {
    std::string op, variant;
    std::size_t device = 0;   // index into ReportData::devices
    std::string source_path;  // the kernel source whose results these are (Store::best: the latest measured)
    std::string source_hash;
    std::vector<std::string> peer_labels;  // peers that timed at least one of the rows, sorted
    std::vector<ProblemRow> rows;          // by dtype, then shape values numerically
    std::size_t unmatched_peers = 0;       // peer timings of this op on a device of this name for problems not in rows
};

// A peer measurement with no ktune result to set it against: an (op, variant, problem) that ktune has not timed on a
// device of that name. Reports list these on their own, so an import is never silently left out.
struct UnmatchedPeer {
    std::string op, variant, device_name;
    Problem problem;
    std::string impl, method;
    double p50_us = k_report_nan, p95_us = k_report_nan, p99_us = k_report_nan;
    std::int64_t n = 0;
    std::string source;  // the file it was imported from
};

struct ReportData {
    std::string title = "ktune report";
    std::string generated_at;  // ISO-8601 UTC
    std::string database;      // the results database it was collected from
    std::vector<ReportDevice> devices;
    std::vector<OpSection> sections;             // by op, variant, then device
    std::vector<UnmatchedPeer> unmatched_peers;  // by op, variant, device name, problem, impl, method

    // Every peer label of every section, sorted: the CSV's per-peer columns and the chart colours.
    std::vector<std::string> peer_labels() const;
};

// Peers timed as kernel durations (method "cupti_kernel_sum": CUPTI or the profiler) compare with ktune's CUPTI p50;
// every other method is event-timed like ktune's primary percentiles, which only those can be compared with.
bool is_kernel_duration_method(const std::string& method);

}  // namespace ktune
