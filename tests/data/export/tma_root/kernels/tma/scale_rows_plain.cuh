#pragma once
// scale_rows, one block of BLOCK threads per row.
#include "kernels/tma/scale_rows_common.cuh"

template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK) scale_rows_plain(T* y, const T* x, const float* scale, int rows, int cols) {
    const long long r = blockIdx.x;
    if (r >= rows) return;
    for (int c = threadIdx.x; c < cols; c += BLOCK)
        scale_rows_store(&y[r * cols + c], scale_rows_load(x[r * cols + c]) * scale[c]);
}
