#pragma once
// bias_gelu, one block of WARPS warps per row (spaces/bias_gelu.yaml, alternative rows).
#include "kernels/user/bias_gelu_common.cuh"

template <typename T, int WARPS, int VEC>
__global__ void __launch_bounds__(WARPS * 32)
    bias_gelu_rows(T* y, const T* x, const float* bias, int rows, int cols, long long stride, float half) {
    (void)half;
    const long long r = blockIdx.x;
    if (r >= rows) return;
    for (int c = threadIdx.x * VEC; c < cols; c += WARPS * 32 * VEC)
        for (int v = 0; v < VEC && c + v < cols; ++v)
            y[r * stride + c + v] =
                bias_gelu_store<T>(bias_gelu_one(bias_gelu_load(x[r * stride + c + v]) + bias[c + v]));
}
