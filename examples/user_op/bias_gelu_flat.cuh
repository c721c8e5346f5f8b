#pragma once
// bias_gelu, the flat kernel: y[r, c] = gelu(x[r, c] + b[c]) over M rows of N (row-major, contiguous), the M * N
// elements taken as one range, VEC at a time, grid-stride. Driven by bias_gelu.yaml (alternative flat).
// Tunables: BLOCK threads per block (64..1024); VEC elements per access (VEC * sizeof(T) <= 16); FAST the SFU's tanh;
// LOAD how x is read (cached or streaming).
// Rows whose length is not a multiple of VEC, or unaligned pointers, take the element-by-element path.
#include "bias_gelu_common.cuh"

template <typename T, int BLOCK, int VEC, bool FAST, bias_gelu::Load LOAD>
__global__ void __launch_bounds__(BLOCK) bias_gelu_flat(T* __restrict__ y, const T* __restrict__ x,
                                                          const T* __restrict__ b, int m, int n) {
    static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0, "bias_gelu_flat: BLOCK a multiple of 32 <= 1024");
    static_assert(VEC >= 1 && (VEC & (VEC - 1)) == 0 && VEC * sizeof(T) <= 16, "bias_gelu_flat: VEC * sizeof(T) <= 16");
    using namespace bias_gelu;
    const long long total = static_cast<long long>(m) * n;
    const long long stride = static_cast<long long>(gridDim.x) * BLOCK;
    if (n % VEC == 0 && aligned<T, VEC>(x) && aligned<T, VEC>(y) && aligned<T, VEC>(b)) {
        for (long long i = (static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x) * VEC; i < total;
             i += stride * VEC) {
            const Vec<T, VEC> xv = load<LOAD, T, VEC>(x + i);
            const Vec<T, VEC> bv = *reinterpret_cast<const Vec<T, VEC>*>(b + i % n);
            Vec<T, VEC> yv;
#pragma unroll
            for (int k = 0; k < VEC; ++k) yv.v[k] = from_float<T>(gelu_tanh<FAST>(to_float(xv.v[k]) + to_float(bv.v[k])));
            *reinterpret_cast<Vec<T, VEC>*>(y + i) = yv;
        }
        return;
    }
    for (long long i = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x; i < total; i += stride)
        y[i] = from_float<T>(gelu_tanh<FAST>(to_float(x[i]) + to_float(b[i % n])));
}
