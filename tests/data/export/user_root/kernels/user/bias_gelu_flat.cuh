#pragma once
// bias_gelu, one thread per VEC elements of the flattened rows (spaces/bias_gelu.yaml, alternative flat).
#include "kernels/user/bias_gelu_common.cuh"

template <typename T, int BLOCK, int VEC>
__global__ void __launch_bounds__(BLOCK)
    bias_gelu_flat(T* y, const T* x, const float* bias, int rows, int cols, long long stride, float half) {
    (void)half;
    const long long first = (static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x) * VEC;
    for (int v = 0; v < VEC; ++v) {
        const long long i = first + v;
        if (i >= static_cast<long long>(rows) * cols) return;
        const long long r = i / cols, c = i % cols;
        y[r * stride + c] = bias_gelu_store<T>(bias_gelu_one(bias_gelu_load(x[r * stride + c]) + bias[c]));
    }
}
