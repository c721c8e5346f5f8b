#pragma once
// RMSNorm backward, the reference the tuned kernels are validated against (same arguments as they take):
//
//   rstd[r]  = 1 / sqrt(mean_c(x[r, :]^2) + eps)
//   dx[r, c] = rstd[r] * dy[r, c] * w[c] - rstd[r]^3 * mean_c(dy[r, :] * w * x[r, :]) * x[r, c]
//   dw[c]    = sum_r dy[r, c] * x[r, c] * rstd[r]        (fp32)
//
// Plain: scalar loads, everything in double. Each block takes chunks of REFERENCE_CHUNK_ROWS rows: per row, the two
// sums reduced in shared memory in a fixed order and dx rounded once to T; then per column the chunk's dw sum, added
// with a double atomicAdd to a column sum in scratch. The last block to finish (arrival counter) rounds the column sums
// to fp32 into dw and zeroes them and the counter. The order of the double atomics varies between runs: dw can differ
// in the last bits of a double, far below any fp32 tolerance.
// Launch (search_spaces/rmsnorm_bwd.yaml reference_launch): block of at most 256 threads, any grid; ceil_div(M, 64)
// gives one chunk per block. Scratch region: kernels/rmsnorm/rmsnorm_bwd_layout.cuh (after the tuned kernels').
#include "kernels/common/ktune_device.cuh"
#include "kernels/rmsnorm/rmsnorm_bwd_layout.cuh"

template <typename T>
__global__ void __launch_bounds__(256)
    rmsnorm_bwd_reference(T* dx, float* dw, float* scratch, const T* x, const T* dy, const T* w, int rows, int hidden,
                          long long x_row_stride, long long dy_row_stride, long long dx_row_stride, float eps) {
    constexpr int REFERENCE_MAX_THREADS = 256;
    constexpr int REFERENCE_CHUNK_ROWS = 64;
    __shared__ double partial[2][REFERENCE_MAX_THREADS];
    __shared__ double rstd_of[REFERENCE_CHUNK_ROWS];
    __shared__ bool last_block;
    using ktune::dev::from_double;
    using ktune::dev::to_float;

    float* region = scratch + ktune::rmsnorm_bwd_layout::dw_reference_offset(rows, hidden);
    unsigned* arrivals = reinterpret_cast<unsigned*>(region);
    double* column_sum = reinterpret_cast<double*>(region + ktune::rmsnorm_bwd_layout::DW_REFERENCE_HEADER);

    const int tid = threadIdx.x;
    const int threads = blockDim.x;
    int width = 1;
    while (width < threads) width <<= 1;
    for (long long chunk = blockIdx.x; chunk * REFERENCE_CHUNK_ROWS < rows; chunk += gridDim.x) {
        const long long first = chunk * REFERENCE_CHUNK_ROWS;
        const int count = rows - first < REFERENCE_CHUNK_ROWS ? static_cast<int>(rows - first) : REFERENCE_CHUNK_ROWS;
        for (int k = 0; k < count; ++k) {
            const long long r = first + k;
            const T* xr = x + r * x_row_stride;
            const T* gr = dy + r * dy_row_stride;
            double sxx = 0.0, sgx = 0.0;
            for (int c = tid; c < hidden; c += threads) {
                const double v = to_float(xr[c]);
                sxx += v * v;
                sgx += static_cast<double>(to_float(gr[c])) * static_cast<double>(to_float(w[c])) * v;
            }
            partial[0][tid] = sxx;
            partial[1][tid] = sgx;
            __syncthreads();
            for (int half = width / 2; half > 0; half >>= 1) {  // the same order on every run
                if (tid < half && tid + half < threads) {
                    partial[0][tid] += partial[0][tid + half];
                    partial[1][tid] += partial[1][tid + half];
                }
                __syncthreads();
            }
            const double rstd = 1.0 / sqrt(partial[0][0] / static_cast<double>(hidden) + static_cast<double>(eps));
            const double k3 = rstd * rstd * rstd * (partial[1][0] / static_cast<double>(hidden));
            if (tid == 0) rstd_of[k] = rstd;
            __syncthreads();  // everyone has read partial[.][0] before the next row overwrites it
            T* dr = dx + r * dx_row_stride;
            for (int c = tid; c < hidden; c += threads) {
                const double v = to_float(xr[c]);
                const double g = to_float(gr[c]);
                dr[c] = from_double<T>(rstd * g * static_cast<double>(to_float(w[c])) - k3 * v);
            }
        }
        __syncthreads();  // rstd_of complete
        for (int c = tid; c < hidden; c += threads) {
            double s = 0.0;
            for (int k = 0; k < count; ++k) {
                const long long r = first + k;
                s += static_cast<double>(to_float(dy[r * dy_row_stride + c])) *
                     static_cast<double>(to_float(x[r * x_row_stride + c])) * rstd_of[k];
            }
            atomicAdd(column_sum + c, s);
        }
        __syncthreads();  // rstd_of is rewritten by the next chunk
    }

    // The last block to arrive sees every column sum complete.
    __threadfence();
    __syncthreads();
    if (tid == 0) last_block = atomicAdd(arrivals, 1u) + 1 == gridDim.x;
    __syncthreads();
    if (!last_block) return;
    __threadfence();
    for (int c = tid; c < hidden; c += threads) {
        volatile double* sum = column_sum + c;
        dw[c] = static_cast<float>(*sum);
        *sum = 0.0;
    }
    if (tid == 0) *arrivals = 0u;
}
