#pragma once
// Device identity: what a GPU's results are filed under, and the ceilings ktune measured on it (docs/design.md, "Device
// identity"). Plain data, so every module may include it; the worker fills it, the store keeps it.
#include <cstdint>
#include <string>

namespace ktune {

// What identifies a GPU for tuning results (see docs/design.md, "Device identity").
struct DeviceInfo {
    std::string key;   // derived by make_device_key(); the primary identity
    std::string name;  // "NVIDIA H100 80GB HBM3"
    int cc_major = 0, cc_minor = 0;
    int sm_count = 0;
    std::int64_t l2_bytes = 0;
    std::int64_t memory_bytes = 0;
    int memory_clock_khz = 0;
    int memory_bus_bits = 0;
    int sm_clock_khz = 0;
    std::string driver_version;  // "13.0" (from cuDriverGetVersion) plus the kernel-module version when known
    std::string cuda_version;    // toolkit the worker was built against
    std::string nvrtc_version;
    std::string uuid;
    std::string pci_bus_id;
    // The calibration: ceilings measured by `ktune devices` or a tuning (0 when never measured), and where. Two GPUs
    // with one key can differ here (calibration_difference), so it travels with the key.
    double copy_gbps = 0;              // device-to-device copy, bytes read + written per second / 1e9
    double launch_floor_us = 0;        // an empty kernel's event-timed duration with launch latency hidden
    double launch_floor_cupti_us = 0;  // the same empty kernel's duration by CUPTI (0 when not taken)
    std::string host;                  // the host the calibration was measured on
    std::string measured_at;           // ISO-8601 UTC of the ceiling measurement

    std::string arch() const;      // "sm_90"
    std::string chip_key() const;  // name + arch + SM count: the "same chip" fallback level
};

std::string make_device_key(const DeviceInfo& d);

// How far two measurements of one ceiling may differ and still be the same device: the measurement's own noise from
// one process to the next (on an H100: copy ceiling ~1 %, event launch floor 0.07-0.15 us of ~2.3-3.2 us, CUPTI floor
// a tick of 32 ns) with a margin. Two H100 host kinds with one key differed by 3.2 against 5.0 us (docs/design.md).
inline constexpr double kCopyCeilingNoise = 0.05;   // relative
inline constexpr double kLaunchFloorNoise = 0.10;   // relative
inline constexpr double kLaunchFloorNoiseUs = 0.1;  // absolute, below which floors always agree
// The CUPTI floor (an empty kernel's duration, ~1 us) moved 0.16 us between two H100s of one host and two runs
// (0.86 against 1.02 us, 2026-11-27), which split them into two devices; host kinds differ by a microsecond or more.
inline constexpr double kLaunchFloorCuptiNoiseUs = 0.3;  // absolute

// Why two calibrations of one device key are not the same device ("launch floor (events) 3.23 against 5.02 us (55 %
// apart)"), or ""
// when every ceiling both have measured agrees within noise. A ceiling one of them never measured is not compared.
std::string calibration_difference(const DeviceInfo& a, const DeviceInfo& b);

// The key under which a device whose calibration differs from the one already filed under `d.key` is kept apart: the
// key with the host (and, for a second GPU on one host, its PCI bus id) appended, so both stay readable.
std::string distinct_device_key(const DeviceInfo& d, bool with_bus_id);

}  // namespace ktune
