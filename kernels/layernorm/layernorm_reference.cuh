#pragma once
// LayerNorm forward, the references the tuned kernels are validated against (same arguments as layernorm_fwd /
// layernorm_fwd_nobias):
//
//   mean = mean(x[r, :]),  var = mean((x[r, :] - mean)^2)
//   y[r, c] = (x[r, c] - mean) / sqrt(var + eps) * w[c] (+ b[c])
//
// Plain: scalar loads, everything in double, two passes over the row (mean, then squared deviations), each reduced in
// shared memory in a fixed order; y rounded once to T. Padding columns are not touched.
// Launch: block of at most 256 threads, any grid (blocks loop over rows; grid = M gives one row per block).
#include "kernels/common/ktune_device.cuh"

namespace ktune::dev::layernorm_reference {

// Sum of one double per thread, the same tree order every run. Every thread of the block calls it; all get the sum.
__device__ inline double block_sum(double v, double* partial) {
    const int tid = threadIdx.x;
    const int threads = blockDim.x;
    int width = 1;
    while (width < threads) width <<= 1;
    partial[tid] = v;
    __syncthreads();
    for (int half = width / 2; half > 0; half >>= 1) {
        if (tid < half && tid + half < threads) partial[tid] += partial[tid + half];
        __syncthreads();
    }
    const double s = partial[0];
    __syncthreads();  // everyone has read partial[0] before the next call overwrites it
    return s;
}

template <typename T, bool HAS_BIAS>
__device__ void rows(T* y, const T* x, const T* w, const T* b, int rows, int hidden, long long x_row_stride,
                     long long y_row_stride, float eps) {
    constexpr int REFERENCE_MAX_THREADS = 256;
    __shared__ double partial[REFERENCE_MAX_THREADS];
    const int tid = threadIdx.x;
    const int threads = blockDim.x;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * x_row_stride;
        double sum = 0.0;
        for (int c = tid; c < hidden; c += threads) sum += to_float(xr[c]);
        const double mean = block_sum(sum, partial) / static_cast<double>(hidden);
        double dev = 0.0;
        for (int c = tid; c < hidden; c += threads) {
            const double d = static_cast<double>(to_float(xr[c])) - mean;
            dev += d * d;
        }
        const double var = block_sum(dev, partial) / static_cast<double>(hidden);
        const double rstd = 1.0 / sqrt(var + static_cast<double>(eps));
        T* yr = y + r * y_row_stride;
        for (int c = tid; c < hidden; c += threads) {
            double v = (static_cast<double>(to_float(xr[c])) - mean) * rstd * static_cast<double>(to_float(w[c]));
            if constexpr (HAS_BIAS) v += static_cast<double>(to_float(b[c]));
            yr[c] = from_double<T>(v);
        }
    }
}

}  // namespace ktune::dev::layernorm_reference

template <typename T>
__global__ void __launch_bounds__(256)
    layernorm_fwd_reference(T* y, const T* x, const T* w, const T* b, int rows, int hidden, long long x_row_stride,
                            long long y_row_stride, float eps) {
    ktune::dev::layernorm_reference::rows<T, true>(y, x, w, b, rows, hidden, x_row_stride, y_row_stride, eps);
}

template <typename T>
__global__ void __launch_bounds__(256)
    layernorm_fwd_nobias_reference(T* y, const T* x, const T* w, int rows, int hidden, long long x_row_stride,
                                   long long y_row_stride, float eps) {
    ktune::dev::layernorm_reference::rows<T, false>(y, x, w, nullptr, rows, hidden, x_row_stride, y_row_stride, eps);
}
