#pragma once
// y = gelu(x + bias) for one element, in float (tanh approximation): shared by the user op's kernels.
#include <cuda_fp16.h>

__device__ inline float bias_gelu_one(float v) {
    return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
}
__device__ inline float bias_gelu_load(float v) { return v; }
__device__ inline float bias_gelu_load(__half v) { return __half2float(v); }
template <typename T>
__device__ inline T bias_gelu_store(float v);
template <>
__device__ inline float bias_gelu_store<float>(float v) {
    return v;
}
template <>
__device__ inline __half bias_gelu_store<__half>(float v) {
    return __float2half(v);
}
