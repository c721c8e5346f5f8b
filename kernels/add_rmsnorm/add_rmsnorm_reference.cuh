#pragma once
// Fused residual add + RMSNorm forward, the references the tuned kernels are validated against (same arguments as
// add_rmsnorm_fwd / add_rmsnorm_fwd_inplace):
//
//   s = x + residual;  residual_out = s rounded to T;  y = s * rsqrt(mean(s^2) + eps) * g rounded to T
//   (g = w, or 1 + w when OFFSET)
//
// Plain: scalar loads, s and everything after it in double (x + residual of two T values is exact in double, as it is
// in the tuned kernel's fp32 for 16-bit T), sum of squares reduced in shared memory in a fixed order, each output
// rounded once to T. Padding columns are not touched.
// Launch: block of at most 256 threads, any grid (blocks loop over rows; grid = M gives one row per block).
#include "kernels/common/ktune_device.cuh"

namespace ktune::dev::add_rmsnorm_reference {

template <typename T, int OFFSET>
__device__ void rows(T* y, T* res_out, const T* x, const T* res_in, const T* w, int rows, int hidden,
                     long long x_row_stride, long long residual_row_stride, long long y_row_stride, float eps) {
    constexpr int REFERENCE_MAX_THREADS = 256;
    __shared__ double partial[REFERENCE_MAX_THREADS];
    const int tid = threadIdx.x;
    const int threads = blockDim.x;
    int width = 1;
    while (width < threads) width <<= 1;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * x_row_stride;
        const T* rr = res_in + r * residual_row_stride;
        double sum_sq = 0.0;
        for (int c = tid; c < hidden; c += threads) {
            const double s = static_cast<double>(to_float(xr[c])) + static_cast<double>(to_float(rr[c]));
            sum_sq += s * s;
        }
        partial[tid] = sum_sq;
        __syncthreads();
        for (int half = width / 2; half > 0; half >>= 1) {
            if (tid < half && tid + half < threads) partial[tid] += partial[tid + half];
            __syncthreads();
        }
        const double rstd = 1.0 / sqrt(partial[0] / static_cast<double>(hidden) + static_cast<double>(eps));
        __syncthreads();  // everyone has read partial[0] before the next row overwrites it
        T* yr = y + r * y_row_stride;
        T* ro = res_out + r * residual_row_stride;
        for (int c = tid; c < hidden; c += threads) {
            // Read before write: res_out may be res_in (in place); each element is read and written by one thread.
            const double s = static_cast<double>(to_float(xr[c])) + static_cast<double>(to_float(rr[c]));
            const double wc = static_cast<double>(to_float(w[c]));
            const double g = OFFSET != 0 ? 1.0 + wc : wc;
            ro[c] = from_double<T>(s);
            yr[c] = from_double<T>(s * rstd * g);
        }
    }
}

}  // namespace ktune::dev::add_rmsnorm_reference

template <typename T, int OFFSET>
__global__ void __launch_bounds__(256)
    add_rmsnorm_fwd_reference(T* y, T* residual_out, const T* x, const T* residual, const T* w, int rows, int hidden,
                              long long x_row_stride, long long residual_row_stride, long long y_row_stride,
                              float eps) {
    ktune::dev::add_rmsnorm_reference::rows<T, OFFSET>(y, residual_out, x, residual, w, rows, hidden, x_row_stride,
                                                       residual_row_stride, y_row_stride, eps);
}

template <typename T, int OFFSET>
__global__ void __launch_bounds__(256)
    add_rmsnorm_fwd_inplace_reference(T* y, T* residual, const T* x, const T* w, int rows, int hidden,
                                      long long x_row_stride, long long residual_row_stride, long long y_row_stride,
                                      float eps) {
    ktune::dev::add_rmsnorm_reference::rows<T, OFFSET>(y, residual, x, residual, w, rows, hidden, x_row_stride,
                                                       residual_row_stride, y_row_stride, eps);
}
