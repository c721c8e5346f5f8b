#pragma once
// Template arguments of the tuned gemm kernels (kernels/gemm/gemm_wgmma.cuh, gemm_wgmma_ws.cuh) and their epilogue
// activations in fp32, the references' formulas (kernels/gemm/gemm_reference.cuh: ACT 0 none, 1 gelu,
// 2 silu).
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#include "kernels/glu/glu_common.cuh"

namespace ktune::dev::gemm {

enum class Act {
    none,
    gelu,  // gelu with the tanh approximation: 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3)))
    silu,  // v * sigmoid(v)
};

// GELU and SiLU are glu::activate's (kernels/glu/glu_common.cuh): v * sigmoid(z) through __expf and __fdividef, a few
// ulp in fp32, where the references keep tanhf and a division (its cost in the epilogue was not measured alone).
template <Act A>
__device__ __forceinline__ float activate(float v) {
    if constexpr (A == Act::gelu) {
        return glu::activate<glu::Act::gelu_tanh>(v);
    } else if constexpr (A == Act::silu) {
        return glu::activate<glu::Act::silu>(v);
    } else {
        return v;
    }
}

}  // namespace ktune::dev::gemm
#endif
