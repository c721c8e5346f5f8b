#pragma once
// Template arguments of the tuned gemm kernels (kernels/gemm/gemm_wgmma.cuh, gemm_wgmma_ws.cuh) and their epilogue
// activations in fp32, the references' formulas (kernels/gemm/gemm_reference.cuh: ACT 0 none, 1 gelu,
// 2 silu).
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
namespace ktune::dev::gemm {

enum class Act {
    none,
    gelu,  // gelu with the tanh approximation: 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3)))
    silu,  // v * sigmoid(v)
};

// Both as v * sigmoid(z) (0.5 (1 + tanh(u)) = sigmoid(2 u)), through __expf and __fdividef: a few ulp in fp32, and
// a handful of instructions where tanhf and a division take several times as many, in an epilogue the tensor cores
// may wait for (glu::activate, kernels/glu/glu_common.cuh, computes the same). For z -> -inf __expf overflows to inf
// and the quotient is a correctly signed 0.
template <Act A>
__device__ __forceinline__ float activate(float v) {
    if constexpr (A == Act::gelu) {
        constexpr float k = 1.5957691216057308f;  // 2 sqrt(2 / pi)
        return __fdividef(v, 1.0f + __expf(-k * fmaf(0.044715f * v, v * v, v)));
    } else if constexpr (A == Act::silu) {
        return __fdividef(v, 1.0f + __expf(-v));
    } else {
        return v;
    }
}

}  // namespace ktune::dev::gemm
#endif
