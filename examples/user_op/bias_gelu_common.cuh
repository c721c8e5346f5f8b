#pragma once
// What both bias_gelu kernels share: element conversions, the tanh-form GELU, and a vector of VEC elements that
// loads and stores as one access. Plain CUDA: no ktune header is needed to write a kernel ktune tunes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace bias_gelu {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// gelu(v) = v/2 * (1 + tanh(sqrt(2/pi) * (v + 0.044715 v^3))). FAST: the SFU's tanh.approx.f32 (about 2^-11
// relative error, below bf16's and fp16's rounding); otherwise tanhf.
template <bool FAST>
__device__ __forceinline__ float gelu_tanh(float v) {
    const float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    float t;
    if constexpr (FAST) {
        asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(u));
    } else {
        t = tanhf(u);
    }
    return 0.5f * v * (1.0f + t);
}

template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Vec {
    T v[VEC];
};

// How x is read: through the caches as usual, or streaming (ld.global.cs: evict first, x is read once).
enum class Load { cached, streaming };

template <int BYTES> struct Word;
template <> struct Word<2> { using type = unsigned short; };
template <> struct Word<4> { using type = unsigned int; };
template <> struct Word<8> { using type = uint2; };
template <> struct Word<16> { using type = uint4; };

template <Load L, typename T, int VEC>
__device__ __forceinline__ Vec<T, VEC> load(const T* p) {
    if constexpr (L == Load::streaming && sizeof(Vec<T, VEC>) >= 2) {
        using W = typename Word<sizeof(Vec<T, VEC>)>::type;
        const W w = __ldcs(reinterpret_cast<const W*>(p));
        return *reinterpret_cast<const Vec<T, VEC>*>(&w);
    } else {
        return *reinterpret_cast<const Vec<T, VEC>*>(p);
    }
}

template <typename T, int VEC>
__device__ __forceinline__ bool aligned(const T* p) {
    return reinterpret_cast<unsigned long long>(p) % (sizeof(T) * VEC) == 0;
}

}  // namespace bias_gelu
