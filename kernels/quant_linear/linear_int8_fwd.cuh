#pragma once
// INT8 weight-only linear, the tuned kernel: y[m, n] = scale[n] * sum_k x[m, k] * q[n, k] for m < M, n < N: x [M, K]
// and y [M, N] of T (__half, __nv_bfloat16), q signed bytes in the packed layout of
// kernels/quant_linear/quant_linear_layout.cuh, per-channel scale [N] of T. fp32 accumulation; y rounded once to T.
// Driven by search_spaces/linear_int8.yaml (op linear_int8, variant fwd); reference:
// kernels/quant_linear/quant_linear_reference.cuh. The body, its tunables and their legal values:
// kernels/quant_linear/quant_linear_gemv.cuh (WARPS, TILES_N, UNROLL, SPLIT_K, M_FRAGS, PIPE,
// PREFETCH, STAGES, INTERLEAVE).
//
// Launch: grid (ceil(N / (16 * TILES_N)), SPLIT_K, ceil(M / (8 * M_FRAGS))), block WARPS * 32, static shared memory
// (with STAGES > 1 the weight ring too, under 48 KiB).
// scratch: scratch_floats(M, N) floats of the layout; max_split_k = max_split_k(M, N).
#include "kernels/quant_linear/quant_linear_gemv.cuh"

template <typename T, int WARPS, int TILES_N, int UNROLL, int SPLIT_K, int M_FRAGS, int PIPE, int PREFETCH,
          int STAGES, int INTERLEAVE>
__global__ void __launch_bounds__(WARPS * 32, ktune::dev::quant_linear::min_blocks(WARPS, TILES_N, M_FRAGS))
    linear_int8_fwd(T* __restrict__ y, const T* __restrict__ x, const signed char* __restrict__ w,
                    const T* __restrict__ scales, float* __restrict__ scratch, int M, int N, int K, int max_split_k) {
    ktune::dev::quant_linear::gemv<T, 8, WARPS, TILES_N, UNROLL, SPLIT_K, M_FRAGS, PIPE, PREFETCH, STAGES,
                                   INTERLEAVE == 2>(
        y, x, reinterpret_cast<const unsigned char*>(w), scales, nullptr, scratch,
        ktune::dev::quant_linear::Problem{M, N, K, 0, max_split_k});
}
