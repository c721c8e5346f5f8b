// Device identity: the readable keys that results are filed under (docs/design.md, "Device identity").
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/device.hpp"

namespace ktune {
namespace {

constexpr std::int64_t k_mib = 1024 * 1024;
constexpr std::int64_t k_gib = 1024 * k_mib;

// DeviceInfo has no memory-type field; the bus width tells HBM (thousands of bits) from GDDR (at most 512).
const char* memory_kind(int bus_bits) {
    if (bus_bits >= 1024) return "HBM";
    if (bus_bits > 0) return "GDDR";
    return "mem";
}

std::string l2_size(std::int64_t bytes) {
    if (bytes % k_mib == 0) return fmt::format("{}MiB", bytes / k_mib);
    return fmt::format("{}KiB", bytes / 1024);
}

}  // namespace

std::string DeviceInfo::arch() const { return fmt::format("sm_{}{}", cc_major, cc_minor); }

std::string DeviceInfo::chip_key() const { return fmt::format("{}|{}|{}SM", name, arch(), sm_count); }

// Whole GiB rounded down, as the driver reports a little less than the marketing size ("80GB" -> 79GiB); the memory
// clock in MHz. Every field is in the key, so a driver or toolkit upgrade files results under a new device.
std::string make_device_key(const DeviceInfo& d) {
    return fmt::format("{}|L2 {}|{} {}GiB@{}MHz|drv {}|cuda {}|nvrtc {}", d.chip_key(), l2_size(d.l2_bytes),
                       memory_kind(d.memory_bus_bits), d.memory_bytes / k_gib, (d.memory_clock_khz + 500) / 1000,
                       d.driver_version, d.cuda_version, d.nvrtc_version);
}

std::string calibration_difference(const DeviceInfo& a, const DeviceInfo& b) {
    std::vector<std::string> differences;
    auto compare = [&](std::string_view what, double x, double y, double rel, double abs, std::string_view unit) {
        if (!(x > 0) || !(y > 0)) return;
        if (std::abs(x - y) <= std::max(abs, rel * std::min(x, y))) return;
        const int digits = unit == "GB/s" ? 0 : 2;
        differences.push_back(fmt::format("{} {:.{}f} against {:.{}f} {} ({:.0f} % apart)", what, x, digits, y, digits,
                                          unit, 100 * std::abs(x - y) / std::min(x, y)));
    };
    compare("copy ceiling", a.copy_gbps, b.copy_gbps, kCopyCeilingNoise, 0, "GB/s");
    compare("launch floor (events)", a.launch_floor_us, b.launch_floor_us, kLaunchFloorNoise, kLaunchFloorNoiseUs,
            "us");
    compare("launch floor (CUPTI)", a.launch_floor_cupti_us, b.launch_floor_cupti_us, kLaunchFloorNoise,
            kLaunchFloorCuptiNoiseUs, "us");
    std::string out;
    for (const std::string& d : differences) out += (out.empty() ? "" : "; ") + d;
    return out;
}

std::string distinct_device_key(const DeviceInfo& d, bool with_bus_id) {
    std::string key = fmt::format("{}|host {}", d.key, d.host.empty() ? "unknown" : d.host);
    if (with_bus_id && !d.pci_bus_id.empty()) key += fmt::format("|gpu {}", d.pci_bus_id);
    return key;
}

}  // namespace ktune
