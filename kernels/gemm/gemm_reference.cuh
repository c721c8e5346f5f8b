#pragma once
// GEMM with bias and activation, the reference the tuned kernels and the cuBLASLt baseline are validated against
// (ops gemm_act/none, gelu, silu: kernels/gemm/gemm_act_*.op.yaml):
//   y[m, n] = act(sum_k x[m, k] * w[n, k] + b[n]),  x [M, K], w [N, K] row-major (as F.linear), b [N], y [M, N]
// Plain and obviously correct: one thread per output, a sequential fp32 sum over k, the bias and the activation in
// fp32 from their textbook formulas, y rounded once to T. ACT: 0 none, 1 gelu in its tanh form
// 0.5 z (1 + tanh(0.7978845608 (z + 0.044715 z^3))) (F.gelu(approximate="tanh"), what cuBLASLt's GELU epilogue
// computes), 2 silu z / (1 + e^-z).
// Launch (search_spaces/gemm_act_*.yaml reference_launch): any 1-D grid and block; grid ceil(M N / 256), block 256
// gives one output a thread (threads loop when the grid is smaller).
#include "kernels/common/ktune_device.cuh"

namespace ktune::dev::gemm_reference {

enum : int { act_none = 0, act_gelu = 1, act_silu = 2 };

template <int ACT>
__device__ __forceinline__ float activation(float z) {
    static_assert(ACT == act_none || ACT == act_gelu || ACT == act_silu, "ACT is 0 (none), 1 (gelu) or 2 (silu)");
    if constexpr (ACT == act_gelu) return 0.5f * z * (1.0f + tanhf(0.7978845608f * (z + 0.044715f * z * z * z)));
    if constexpr (ACT == act_silu) return z / (1.0f + expf(-z));
    return z;
}

// The fp32 dot product of row m of x and row n of w, k in order.
template <typename T>
__device__ __forceinline__ float dot_row(const T* x, const T* w, long long m, long long n, int K) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += to_float(x[m * K + k]) * to_float(w[n * K + k]);
    return acc;
}

}  // namespace ktune::dev::gemm_reference

template <typename T, int ACT>
__global__ void gemm_act_reference(T* y, const T* x, const T* w, const T* b, int M, int N, int K) {
    namespace ref = ktune::dev::gemm_reference;
    const long long outputs = static_cast<long long>(M) * N;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < outputs;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long m = i / N, n = i % N;  // n fastest: a warp shares the row of x and writes y coalesced
        const float z = ref::dot_row(x, w, m, n, K) + ktune::dev::to_float(b[n]);
        y[i] = ktune::dev::from_float<T>(ref::activation<ACT>(z));
    }
}
