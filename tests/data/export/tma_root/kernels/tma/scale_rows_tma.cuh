#pragma once
// scale_rows with three TMA descriptors after the op's arguments (x, y, scale), for the export tests: it only
// prefetches them and computes with the pointers, since the tests compile it and never run it.
#include "kernels/tma/scale_rows_common.cuh"

template <typename T, int ROWS>
__global__ void __launch_bounds__(128)
    scale_rows_tma(T* y, const T* x, const float* scale, int rows, int cols, const __grid_constant__ ScaleRowsMap x_map,
                   const __grid_constant__ ScaleRowsMap y_map, const __grid_constant__ ScaleRowsMap scale_map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (threadIdx.x == 0)
        for (const ScaleRowsMap* m : {&x_map, &y_map, &scale_map})
            asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(m)) : "memory");
#endif
    for (long long r = static_cast<long long>(blockIdx.x) * ROWS; r < rows && r < (blockIdx.x + 1ll) * ROWS; ++r)
        for (int c = threadIdx.x; c < cols; c += 128)
            scale_rows_store(&y[r * cols + c], scale_rows_load(x[r * cols + c]) * scale[c]);
}
