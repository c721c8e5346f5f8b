#pragma once
// INT4 weight-only linear, the tuned kernel: y[m, n] = sum_k x[m, k] * (q[n, k] - zero[k / G, n]) * scale[k / G, n]
// for m < M, n < N: x [M, K] and y [M, N] of T (__half, __nv_bfloat16), q packed two per byte in the layout of
// kernels/quant_linear/quant_linear_layout.cuh, scale of T and zero of u8 in [0, 16) per (group, n) in that file's
// packed order (int4_params(N, K, G) values each, 16-byte aligned for the tuned path), group size G a multiple of 64
// (K need not be a multiple of G). fp32 accumulation; y rounded once to T.
// Driven by search_spaces/linear_int4.yaml and linear_int4_tails.yaml (op linear_int4, variant fwd); reference:
// kernels/quant_linear/quant_linear_reference.cuh. The body, its tunables and their legal values:
// kernels/quant_linear/quant_linear_gemv.cuh (WARPS, TILES_N, UNROLL, SPLIT_K, M_FRAGS, PIPE,
// PREFETCH, STAGES, INTERLEAVE, GROUP_CHUNKS).
//
// Launch: grid (ceil(N / (16 * TILES_N)), SPLIT_K, ceil(M / (8 * M_FRAGS))), block WARPS * 32, static shared memory
// (with STAGES > 1 the weight ring too, under 48 KiB).
// scratch: scratch_floats(M, N) floats of the layout; max_split_k = max_split_k(M, N).
#include "kernels/quant_linear/quant_linear_gemv.cuh"

template <typename T, int WARPS, int TILES_N, int UNROLL, int SPLIT_K, int M_FRAGS, int PIPE, int PREFETCH,
          int STAGES, int INTERLEAVE, int GROUP_CHUNKS>
__global__ void __launch_bounds__(WARPS * 32, ktune::dev::quant_linear::min_blocks(WARPS, TILES_N, M_FRAGS))
    linear_int4_fwd(T* __restrict__ y, const T* __restrict__ x, const unsigned char* __restrict__ w,
                    const T* __restrict__ scales, const unsigned char* __restrict__ zeros, float* __restrict__ scratch,
                    int M, int N, int K, int group, int max_split_k) {
    ktune::dev::quant_linear::gemv<T, 4, WARPS, TILES_N, UNROLL, SPLIT_K, M_FRAGS, PIPE, PREFETCH, STAGES,
                                   INTERLEAVE == 2, GROUP_CHUNKS>(
        y, x, w, scales, zeros, scratch, ktune::dev::quant_linear::Problem{M, N, K, group, max_split_k});
}
