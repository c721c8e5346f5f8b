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

// GELU for outputs rounded to bf16: 0.5 v (1 + tanh(u)) through tanh.approx, one MUFU op an output where the sigmoid
// form below takes two (ex2, rcp). tanh.approx errs by up to 2^-11 of tanh: about 2^-12 |v| absolute in the output
// (large beside the output itself where 1 + tanh(u) is small, v < -1), an eighth of bf16's rounding of v but half of
// fp16's, whose spaces hold tighter tolerances: fp16 keeps the sigmoid form. Up to 2.4 % faster per configuration at
// M >= 2048 (docs/performance.md, "GELU through tanh.approx").
template <typename T>
inline constexpr bool kGeluByTanh = false;
template <>
inline constexpr bool kGeluByTanh<__nv_bfloat16> = true;

// Otherwise GELU and SiLU are glu::activate's (kernels/glu/glu_common.cuh): v * sigmoid(z) through __expf and
// __fdividef, a few ulp in fp32, where the references keep tanhf and a division. T: the output's type.
template <Act A, typename T = float>
__device__ __forceinline__ float activate(float v) {
    if constexpr (A == Act::gelu && kGeluByTanh<T>) {
        const float u = v * fmaf(0.0356774081363001f, v * v, 0.7978845608028654f);  // sqrt(2/pi) (v + 0.044715 v^3)
        float t;
        asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(u));
        const float h = 0.5f * v;
        return fmaf(h, t, h);
    } else if constexpr (A == Act::gelu) {
        return glu::activate<glu::Act::gelu_tanh>(v);
    } else if constexpr (A == Act::silu) {
        return glu::activate<glu::Act::silu>(v);
    } else {
        return v;
    }
}

}  // namespace ktune::dev::gemm
#endif
