#pragma once
// scale_rows (spaces/scale_rows.yaml): element conversions shared by its kernels.
#include <cuda_fp16.h>

__device__ inline float scale_rows_load(float v) { return v; }
__device__ inline float scale_rows_load(__half v) { return __half2float(v); }
__device__ inline void scale_rows_store(float* p, float v) { *p = v; }
__device__ inline void scale_rows_store(__half* p, float v) { *p = __float2half(v); }

// A TMA descriptor as the kernel takes it: the 128 bytes of a CUtensorMap, its own type (as kernels/gemm's).
struct alignas(64) ScaleRowsMap {
    unsigned long long opaque[16];
};
