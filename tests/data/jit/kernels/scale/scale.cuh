// scale: out[i] = in[i] * factor, staged through shared memory. Test kernel for the NVRTC compile service (no YAML).
//   T      element type: float, __half, __nv_bfloat16
//   BLOCK  threads per block; a multiple of 32 (static_assert below, so a bad value fails to compile)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/common/jit_test_math.cuh"
#include "scale_config.cuh"

template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK) scale(T* out, const T* in, float factor, int n) {
    static_assert(BLOCK % 32 == 0, "BLOCK must be a multiple of the warp size");
    __shared__ float tile[BLOCK];
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    tile[threadIdx.x] = i < n ? ktune_test_to_float(in[i]) * factor : 0.0f;
    __syncthreads();
    if (i < n) out[i] = static_cast<T>(tile[(threadIdx.x + KTUNE_TEST_SHIFT) % BLOCK]);
}
