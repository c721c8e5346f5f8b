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

// Read, the reference of copy_read (kernels/copy/copy_read.cuh, same arguments): one thread per 512-byte chunk, its
// elements in order. Any 1-D grid and block.
template <typename T>
__global__ void copy_read_reference(T* y, const T* x, long long n) {
    constexpr long long CHUNK = 512 / sizeof(T);
    const long long chunks = (n + CHUNK - 1) / CHUNK;
    for (long long c = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; c < chunks;
         c += static_cast<long long>(gridDim.x) * blockDim.x) {
        float m = ktune::dev::to_float(x[c * CHUNK]);
        for (long long i = c * CHUNK + 1; i < n && i < (c + 1) * CHUNK; ++i) m = fmaxf(m, ktune::dev::to_float(x[i]));
        y[c] = ktune::dev::from_float<T>(m);
    }
}
