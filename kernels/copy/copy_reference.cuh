#pragma once
// Copy, the reference the tuned kernel is validated against (same arguments as copy_fwd in kernels/copy/copy_fwd.cuh):
// element by element, grid stride. Any 1-D grid and block.
#include "kernels/common/ktune_device.cuh"  // the element types
template <typename T>
__global__ void copy_fwd_reference(T* y, const T* x, long long n) {
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<long long>(gridDim.x) * blockDim.x)
        y[i] = x[i];
}
