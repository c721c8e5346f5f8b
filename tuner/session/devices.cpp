#include "tuner/session/devices.hpp"

#include <fmt/format.h>

#include "core/clock.hpp"
#include "tuner/session/environment.hpp"

namespace ktune {

std::vector<DeviceReport> probe_devices(const std::string& worker_path, CompileService& jit, bool measure,
                                        std::size_t copy_bytes, Store* store) {
    std::size_t count = 0;
    {
        WorkerClient probe(worker_path);
        count = probe.start().at("devices").size();
    }
    std::vector<DeviceReport> out;
    for (std::size_t i = 0; i < count; ++i) {
        GpuWorker gpu(worker_path, int(i), jit);
        gpu.start();
        DeviceReport r{gpu.device(), gpu.props(), {}};
        if (measure) {
            r.ceilings = gpu.measure_ceilings(copy_bytes);
            r.info.copy_gbps = r.ceilings.copy_gbps;
            r.info.launch_floor_us = r.ceilings.launch_floor_us;
            r.info.launch_floor_cupti_us = r.ceilings.launch_floor_cupti_us;
            r.info.host = hostname();
            r.info.measured_at = utc_now_iso();
        }
        if (store) {
            store->upsert_device(r.info);
            if (auto stored = store->device(r.info.key)) r.info = *stored;  // keeps earlier ceilings when not measured
        }
        out.push_back(r);
    }
    return out;
}

std::vector<std::vector<std::size_t>> group_equivalent_gpus(std::vector<DeviceInfo>& gpus,
                                                            std::vector<std::string>& notices) {
    std::vector<std::vector<std::size_t>> groups;
    for (std::size_t i = 0; i < gpus.size(); ++i) {
        std::string difference;
        bool placed = false;
        for (auto& g : groups) {
            DeviceInfo& first = gpus[g.front()];
            if (first.key != gpus[i].key) continue;
            difference = calibration_difference(first, gpus[i]);
            if (difference.empty()) {
                g.push_back(i);
                placed = true;
                break;
            }
        }
        if (!placed && !difference.empty()) {
            const std::string apart = distinct_device_key(gpus[i], true);
            notices.push_back(
                fmt::format("GPU {} has the device key of another GPU here but not its calibration ({}): "
                            "tuned as a device of its own, {}",
                            gpus[i].pci_bus_id, difference, apart));
            gpus[i].key = apart;
        }
        if (!placed) groups.push_back({i});
    }
    return groups;
}

DeviceInfo current_device(const std::string& worker_path, CompileService& jit, int ordinal) {
    GpuWorker gpu(worker_path, ordinal, jit);
    gpu.start();
    return gpu.device();
}

}  // namespace ktune
