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

// The GPUs of one host (their keys and calibrations) grouped into the devices they are tuned as (`ktune tune --gpus`):
// GPUs of one key whose calibrations agree within noise with the first of that key share the work; one that differs is
// a device of its own, its key made distinct_device_key(.., with the bus id), and `notices` says why. Returns indices
// into `gpus`, each group in order, groups in order of their first GPU.
std::vector<std::vector<std::size_t>> group_equivalent_gpus(std::vector<DeviceInfo>& gpus,
                                                            std::vector<std::string>& notices);

// The device key of GPU `ordinal` on this machine (starts a worker; no measurement).
DeviceInfo current_device(const std::string& worker_path, CompileService& jit, int ordinal);

}  // namespace ktune
