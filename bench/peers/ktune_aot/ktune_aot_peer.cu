// ktune's tuned RMSNorm forward, compiled ahead of time from an exported header, as a C entry point that
// bench/peers/measure_peers.py loads with ctypes (--ktune-aot-lib). It lets the peers script time ktune's kernel
// with exactly the method and harness it times PyTorch with, so a small-shape comparison does not depend on two
// harnesses agreeing. Build (bench/gpu_run.sh peers-same-harness does it):
//   nvcc -std=c++17 -arch=sm_90 -O3 -shared -Xcompiler -fPIC -I<ktune root> -I<export dir> ktune_aot_peer.cu -o lib.so
#include <cuda_runtime.h>

#include "ktune_tuned_rmsnorm_fwd.hpp"

namespace {

// Device properties are read once per device: the dispatcher needs them for every call.
const ktune_tuned::DeviceProps* props_of(int device) {
    constexpr int k_max_devices = 64;
    static ktune_tuned::DeviceProps props[k_max_devices];
    static bool known[k_max_devices] = {};
    if (device < 0 || device >= k_max_devices) return nullptr;
    if (!known[device]) {
        if (ktune_tuned::query_device_props(device, &props[device]) != ktune_tuned::Status::ok) return nullptr;
        known[device] = true;
    }
    return &props[device];
}

}  // namespace

// dtype: 0 fp32, 1 fp16, 2 bf16 (ktune_tuned::Dtype). Contiguous rows. Returns ktune_tuned::Status as an int (0 ok);
// -1 when the device's properties cannot be read.
extern "C" int ktune_aot_rmsnorm_fwd(int device, int dtype, void* y, const void* x, const void* w, int rows, int hidden,
                                     float eps, void* stream) {
    const ktune_tuned::DeviceProps* props = props_of(device);
    if (props == nullptr) return -1;
    return static_cast<int>(ktune_tuned::rmsnorm_fwd(*props, static_cast<ktune_tuned::Dtype>(dtype), y, x, w, rows,
                                                     hidden, hidden, hidden, eps, static_cast<cudaStream_t>(stream)));
}
