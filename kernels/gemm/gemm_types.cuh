#pragma once
// Template arguments of the tuned gemm kernels (kernels/gemm/gemm_wgmma.cuh, gemm_wgmma_ws.cuh) and their epilogue
// activations, in fp32 from the same formulas as the references (kernels/gemm/gemm_reference.cuh: ACT 0 none, 1 gelu,
// 2 silu).
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
namespace ktune::dev::gemm {

enum class Act {
    none,
    gelu,  // gelu with the tanh approximation: 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3)))
    silu,  // v * sigmoid(v)
};

template <Act A>
__device__ __forceinline__ float activate(float v) {
    if constexpr (A == Act::gelu) {
        constexpr float k = 0.7978845608028654f;  // sqrt(2 / pi)
        return 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
    } else if constexpr (A == Act::silu) {
        return v / (1.0f + expf(-v));
    } else {
        return v;
    }
}

}  // namespace ktune::dev::gemm
#endif
