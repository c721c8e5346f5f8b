#pragma once
// The GEMM ops' small-M alternatives: the dense decode kernel of kernels/linear_skinny/linear_skinny_fwd.cuh (its
// header comment says what each parameter means) under gemm_act's arguments (y, x, w, b, M, N, K), the bias and
// activation fused, and under ffn_gated's (y, x, w, M, I, K), the gate's and the up's rows streamed side by side
// (GATED). Neither op has a scratch buffer, so k is not split (SPLIT_K 1: the kernel then never touches scratch and
// its split check passes with max_split_k 1). For M <= 64 (the spaces' constraint). Launch: grid
// (ceil(N / (16 * TILES_N)), 1, ceil(M / (8 * M_FRAGS))) (ffn_gated: I for N), block WARPS * 32, static shared memory
// only.
#include "kernels/linear_skinny/linear_skinny_fwd.cuh"

template <typename T, int WARPS, int TILES_N, int UNROLL, int M_FRAGS, int STAGES, int ACT>
__global__ void __launch_bounds__(WARPS * 32, ktune::dev::linear_skinny::min_blocks(WARPS, TILES_N, M_FRAGS))
    gemm_act_skinny(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                    int M, int N, int K) {
    ktune::dev::linear_skinny::skinny<T, WARPS, TILES_N, UNROLL, 1, M_FRAGS, STAGES, ACT>(y, x, w, b, nullptr, M, N, K,
                                                                                           1);
}

// y [M, I] = act(x Wg^T) * (x Wu^T) with w [2I, K] = [Wg; Wu]; ACT 1 gelu (tanh form: GeGLU), 2 silu (SwiGLU).
template <typename T, int WARPS, int TILES_N, int UNROLL, int M_FRAGS, int STAGES, int ACT>
__global__ void __launch_bounds__(WARPS * 32, ktune::dev::linear_skinny::min_blocks(WARPS, 2 * TILES_N, M_FRAGS))
    ffn_gated_skinny(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w, int M, int I, int K) {
    ktune::dev::linear_skinny::skinny<T, WARPS, TILES_N, UNROLL, 1, M_FRAGS, STAGES, ACT, false, false, true>(
        y, x, w, nullptr, nullptr, M, I, K, 1);
}
