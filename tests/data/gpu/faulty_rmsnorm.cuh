// Test-only kernel for the GPU tests (tests/data/gpu/faulty_rmsnorm.yaml): a plain RMSNorm forward whose MODE makes it
//   1: correct, 2: wrong (output scaled by 1.05), 3: an illegal memory access, 4: a hang.
// The tuning run must record 2 as invalid_result, 3 as launch_error, 4 as timeout, survive all of them, and pick a
// MODE=1 configuration as the best. Same argument list as kernels/rmsnorm/rmsnorm_reference.cuh.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ inline float faulty_to_float(float v) { return v; }
__device__ inline float faulty_to_float(__half v) { return __half2float(v); }
__device__ inline float faulty_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ inline T faulty_from_float(float v);
template <> __device__ inline float faulty_from_float<float>(float v) { return v; }
template <> __device__ inline __half faulty_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ inline __nv_bfloat16 faulty_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T, int BLOCK, int MODE>
__global__ void __launch_bounds__(BLOCK) faulty_rmsnorm(T* y, const T* x, const T* w, int rows, int hidden,
                                                        long long x_row_stride, long long y_row_stride, float eps) {
    static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
    static_assert(MODE >= 1 && MODE <= 4, "MODE is 1..4");
    if (MODE == 3) {
        // Far outside any allocation: the context faults with an illegal address.
        *reinterpret_cast<volatile float*>(reinterpret_cast<unsigned long long>(y) + (1ull << 46)) = 1.0f;
    }
    if (MODE == 4) {
        volatile int spin = 1;
        while (spin) __nanosleep(1000);
    }
    const int row = blockIdx.x;
    if (row >= rows) return;
    __shared__ float partial[BLOCK];
    float sum = 0.f;
    for (int i = threadIdx.x; i < hidden; i += BLOCK) {
        const float v = faulty_to_float(x[row * x_row_stride + i]);
        sum += v * v;
    }
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) partial[threadIdx.x] += partial[threadIdx.x + k];
        __syncthreads();
    }
    const float scale = rsqrtf(partial[0] / hidden + eps) * (MODE == 2 ? 1.05f : 1.0f);
    for (int i = threadIdx.x; i < hidden; i += BLOCK)
        y[row * y_row_stride + i] =
            faulty_from_float<T>(faulty_to_float(x[row * x_row_stride + i]) * scale * faulty_to_float(w[i]));
}
