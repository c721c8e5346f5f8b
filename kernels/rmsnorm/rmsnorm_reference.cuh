#pragma once
// RMSNorm forward, the reference the tuned kernel is validated against (same arguments as rmsnorm_fwd):
//
//   y[r, c] = x[r, c] * rsqrt(mean_c(x[r, :]^2) + eps) * g[c]     for r < rows, c < hidden
//
// with g = w (OFFSET 0, the default) or 1 + w (OFFSET 1, Gemma; search_spaces/rmsnorm_gemma.yaml).
//
// Plain and obviously correct: scalar loads, sum of squares in double reduced in shared memory in a fixed order, the
// result computed in double and rounded once to T. Padding columns (hidden.. of a strided row) are not touched.
// Launch (search_spaces/rmsnorm.yaml reference_launch): block of at most REFERENCE_MAX_THREADS threads (256), any grid
// (blocks loop over rows; grid = rows gives one row per block).
#include "kernels/common/ktune_device.cuh"

template <typename T, int OFFSET = 0>
__global__ void __launch_bounds__(256)
    rmsnorm_fwd_reference(T* y, const T* x, const T* w, int rows, int hidden, long long x_row_stride,
                          long long y_row_stride, float eps) {
    constexpr int REFERENCE_MAX_THREADS = 256;
    __shared__ double partial[REFERENCE_MAX_THREADS];
    using ktune::dev::from_double;
    using ktune::dev::to_float;

    const int tid = threadIdx.x;
    const int threads = blockDim.x;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * x_row_stride;
        T* yr = y + r * y_row_stride;

        double sum_sq = 0.0;
        for (int c = tid; c < hidden; c += threads) {
            const double v = to_float(xr[c]);
            sum_sq += v * v;
        }
        partial[tid] = sum_sq;
        __syncthreads();
        // Tree over the next power of two: the same order on every run.
        int width = 1;
        while (width < threads) width <<= 1;
        for (int half = width / 2; half > 0; half >>= 1) {
            if (tid < half && tid + half < threads) partial[tid] += partial[tid + half];
            __syncthreads();
        }
        const double inv_rms = 1.0 / sqrt(partial[0] / static_cast<double>(hidden) + static_cast<double>(eps));
        __syncthreads();  // everyone has read partial[0] before the next row overwrites it

        for (int c = tid; c < hidden; c += threads) {
            const double wc = static_cast<double>(to_float(w[c]));
            const double g = OFFSET != 0 ? 1.0 + wc : wc;
            const double v = static_cast<double>(to_float(xr[c])) * inv_rms * g;
            yr[c] = from_double<T>(v);
        }
    }
}
