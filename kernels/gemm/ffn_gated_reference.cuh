#pragma once
// Gated FFN (the gate and up projections and the gated product), the reference the tuned kernels are validated
// against (ops ffn_gated/swiglu, geglu: kernels/gemm/ffn_gated_*.op.yaml):
//   g = sum_k x[m, k] * w[i, k],  u = sum_k x[m, k] * w[I + i, k],  y[m, i] = act(g) * u
// x [M, K], w [2I, K] row-major = [Wg; Wu], y [M, I]. Plain and obviously correct: one thread per output, g and u
// as sequential fp32 sums over k, the activation in fp32 from its textbook formula (kernels/gemm/gemm_reference.cuh:
// ACT 1 gelu in its tanh form, 2 silu), y rounded once to T.
// Launch (search_spaces/ffn_gated_*.yaml reference_launch): any 1-D grid and block; grid ceil(M I / 256), block 256
// gives one output a thread (threads loop when the grid is smaller).
#include "kernels/common/ktune_device.cuh"
#include "kernels/gemm/gemm_reference.cuh"

template <typename T, int ACT>
__global__ void ffn_gated_reference(T* y, const T* x, const T* w, int M, int I, int K) {
    namespace ref = ktune::dev::gemm_reference;
    static_assert(ACT == ref::act_gelu || ACT == ref::act_silu, "ACT is 1 (geglu) or 2 (swiglu)");
    const long long outputs = static_cast<long long>(M) * I;
    for (long long o = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; o < outputs;
         o += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long m = o / I, i = o % I;
        const float g = ref::dot_row(x, w, m, i, K);
        const float u = ref::dot_row(x, w, m, I + i, K);
        y[o] = ktune::dev::from_float<T>(ref::activation<ACT>(g) * u);
    }
}
