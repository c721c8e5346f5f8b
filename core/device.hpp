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
    // Ceilings measured by `ktune devices` (0 when never measured).
    double copy_gbps = 0;        // device-to-device copy, bytes read + written per second / 1e9
    double launch_floor_us = 0;  // an empty kernel's event-timed duration with launch latency hidden
    std::string measured_at;     // ISO-8601 UTC of the ceiling measurement

    std::string arch() const;      // "sm_90"
    std::string chip_key() const;  // name + arch + SM count: the "same chip" fallback level
};

std::string make_device_key(const DeviceInfo& d);

}  // namespace ktune
