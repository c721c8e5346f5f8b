#pragma once
// `ktune devices`: every GPU the driver sees, its identity, and its measured copy-bandwidth and launch floor.
#include <string>
#include <vector>

#include "results/store.hpp"
#include "tuner/session/gpu_worker.hpp"

namespace ktune {

struct DeviceReport {
    DeviceInfo info;
    wire::DeviceProps props;
    DeviceCeilings ceilings;  // zero when not measured
};

// Starts one worker per GPU in turn. With `measure`, measures the ceilings (a copy of `copy_bytes`) and, when
// `store` is given, stores each device with them. Throws Error(no_gpu) without a driver or GPU.
std::vector<DeviceReport> probe_devices(const std::string& worker_path, CompileService& jit, bool measure,
                                        std::size_t copy_bytes, Store* store);

// The device key of GPU `ordinal` on this machine (starts a worker; no measurement).
DeviceInfo current_device(const std::string& worker_path, CompileService& jit, int ordinal);

}  // namespace ktune
