#pragma once
// bias_gelu's reference: one thread per element, tanhf, the same arguments as the tuned kernels. Any 1-D launch.
#include "bias_gelu_common.cuh"

template <typename T>
__global__ void bias_gelu_reference(T* y, const T* x, const T* b, int m, int n) {
    using namespace bias_gelu;
    const long long total = static_cast<long long>(m) * n;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<long long>(gridDim.x) * blockDim.x)
        y[i] = from_float<T>(gelu_tanh<false>(to_float(x[i]) + to_float(b[i % n])));
}
