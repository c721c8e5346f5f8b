// tunables: out[i] = in[i] * (FLAG ? 2 : 1) + OFFSET (+ the vector width for the wgmma engine). Test kernel for
// parameters that are not positive integers (tests/data/spaces/good/tunables.yaml):
//   T       element type: float, __half, __nv_bfloat16
//   FLAG    bool: doubles the input when true
//   ENGINE  an Engine enumerator, named by the space's choice (simt or wgmma)
//   VT      a CUDA vector type, named by the space's choice (float4 or float2)
//   OFFSET  any int, 0 and negatives included
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/common/jit_test_math.cuh"

enum class Engine { simt, wgmma };

template <typename T, bool FLAG, Engine ENGINE, typename VT, int OFFSET>
__global__ void tunables(T* out, const T* in, int n) {
    static_assert(sizeof(VT) == 8 || sizeof(VT) == 16, "VT is float2 or float4");
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = ktune_test_to_float(in[i]) * (FLAG ? 2.0f : 1.0f) + OFFSET;
    if (ENGINE == Engine::wgmma) x += static_cast<float>(sizeof(VT) / sizeof(float));
    out[i] = static_cast<T>(x);
}
