#pragma once
// The reference of scale_rows: one thread per row, a plain loop.
#include "kernels/tma/scale_rows_common.cuh"

template <typename T>
__global__ void scale_rows_reference(T* y, const T* x, const float* scale, int rows, int cols) {
    if (threadIdx.x != 0 || static_cast<int>(blockIdx.x) >= rows) return;
    const long long r = blockIdx.x;
    for (int c = 0; c < cols; ++c) scale_rows_store(&y[r * cols + c], scale_rows_load(x[r * cols + c]) * scale[c]);
}
