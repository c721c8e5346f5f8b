#pragma once
// Weight-only quantized linear, the references the tuned kernels are validated against (same arguments as
// linear_int4_fwd and linear_int8_fwd): dequantize each weight from the packed layout in double, then a plain product
// in double, rounded once to T:
//   INT4: y[m, n] = sum_k x[m, k] * (q[n, k] - zero[k / G, n]) * scale[k / G, n] (scales and zero points packed)
//   INT8: y[m, n] = sum_k x[m, k] * q[n, k] * scale[n]
//   dense (linear/fwd, the cuBLAS baseline's op): y[m, n] = sum_k x[m, k] * w[n, k], w of type T, [N, K] row-major
// Weights, scales and zero points are located with the same functions the host packing uses
// (kernels/quant_linear/quant_linear_layout.cuh), so a kernel that reads the packed layout differently fails
// validation. One warp per output column n; lanes take k = lane, lane + 32, ... and each holds the sums of 8 rows of
// x at a time; the lanes' sums are added in a fixed order (a butterfly). scratch and max_split_k are unused.
// Launch (search_spaces/linear_int*.yaml reference_launch): grid ceil(N / 8), block 256 (8 warps).
#include "kernels/common/ktune_device.cuh"
#include "kernels/quant_linear/quant_linear_layout.cuh"

namespace ktune::dev::quant_linear_reference {

__device__ __forceinline__ double warp_sum_double(double v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// Dequantized weight (n, k); BITS 16: w holds T values, [N, K] row-major.
template <typename T, int BITS>
__device__ double weight(const unsigned char* w, const T* scales, const unsigned char* zeros, long long n, long long k,
                         int N, int K, int group) {
    namespace layout = ktune::quant_linear_layout;
    if constexpr (BITS == 4) {
        const layout::Position p = layout::int4_position(n, k, K);
        const int q = (w[p.byte] >> p.shift) & 0xF;
        const long long gi = layout::int4_param_index(n, k / group, layout::groups(K, group));
        return (static_cast<double>(q) - static_cast<double>(zeros[gi])) * static_cast<double>(to_float(scales[gi]));
    } else if constexpr (BITS == 16) {
        return static_cast<double>(to_float(reinterpret_cast<const T*>(w)[n * K + k]));
    } else {
        const layout::Position p = layout::int8_position(n, k, K);
        const int q = static_cast<signed char>(w[p.byte]);
        return static_cast<double>(q) * static_cast<double>(to_float(scales[n]));
    }
}

template <typename T, int BITS>
__device__ void gemv(T* y, const T* x, const unsigned char* w, const T* scales, const unsigned char* zeros, int M,
                     int N, int K, int group) {
    const int lane = threadIdx.x & 31;
    const long long n = static_cast<long long>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
    if (n >= N) return;  // whole warps
    for (int m0 = 0; m0 < M; m0 += 8) {
        double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (long long k = lane; k < K; k += 32) {
            const double wv = weight<T, BITS>(w, scales, zeros, n, k, N, K, group);
#pragma unroll
            for (int i = 0; i < 8; ++i)
                if (m0 + i < M) acc[i] += static_cast<double>(to_float(x[static_cast<long long>(m0 + i) * K + k])) * wv;
        }
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const double s = warp_sum_double(acc[i]);
            if (lane == 0 && m0 + i < M) y[static_cast<long long>(m0 + i) * N + n] = from_double<T>(s);
        }
    }
}

}  // namespace ktune::dev::quant_linear_reference

template <typename T>
__global__ void __launch_bounds__(256)
    linear_int4_fwd_reference(T* y, const T* x, const unsigned char* w, const T* scales, const unsigned char* zeros,
                              float* scratch, int M, int N, int K, int group, int max_split_k) {
    (void)scratch;
    (void)max_split_k;
    if (group < 1) return;
    ktune::dev::quant_linear_reference::gemv<T, 4>(y, x, w, scales, zeros, M, N, K, group);
}

template <typename T>
__global__ void __launch_bounds__(256)
    linear_int8_fwd_reference(T* y, const T* x, const signed char* w, const T* scales, float* scratch, int M, int N,
                              int K, int max_split_k) {
    (void)scratch;
    (void)max_split_k;
    ktune::dev::quant_linear_reference::gemv<T, 8>(y, x, reinterpret_cast<const unsigned char*>(w), scales, nullptr, M,
                                                   N, K, 0);
}

template <typename T>
__global__ void __launch_bounds__(256) linear_fwd_reference(T* y, const T* x, const T* w, int M, int N, int K) {
    ktune::dev::quant_linear_reference::gemv<T, 16>(y, x, reinterpret_cast<const unsigned char*>(w), nullptr, nullptr,
                                                    M, N, K, 0);
}
