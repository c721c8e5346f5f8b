#pragma once
// Row softmax, the reference the tuned kernels are validated against (same arguments as softmax_fwd_registers and
// softmax_fwd_staged; kernels/softmax/softmax_common.cuh states the operation). Plain and obviously correct: one block
// per row, element accesses, three sweeps over the row (max, sum of exp, output) in double, reduced in shared memory
// in a fixed order, out rounded once to T. Padding columns are not touched.
// Launch (search_spaces/softmax.yaml reference_launch): block of at most 256 threads, any grid (blocks loop over
// rows; grid = rows gives one row per block).
#include "kernels/common/ktune_device.cuh"

namespace ktune::dev::softmax_reference {

// Tree over the next power of two in shared memory: the same order on every run. Every thread of the block calls it;
// all receive partial[0].
template <bool MAX>
__device__ double block_reduce(double v, double* partial) {
    const int tid = threadIdx.x;
    const int threads = blockDim.x;
    partial[tid] = v;
    __syncthreads();
    int width = 1;
    while (width < threads) width <<= 1;
    for (int half = width / 2; half > 0; half >>= 1) {
        if (tid < half && tid + half < threads)
            partial[tid] = MAX ? fmax(partial[tid], partial[tid + half]) : partial[tid] + partial[tid + half];
        __syncthreads();
    }
    const double r = partial[0];
    __syncthreads();  // everyone has read partial[0] before the next reduction overwrites it
    return r;
}

}  // namespace ktune::dev::softmax_reference

template <typename T>
__global__ void __launch_bounds__(256)
    softmax_fwd_reference(T* out, const T* x, int rows, int cols, long long x_row_stride, long long out_row_stride,
                          float scale) {
    constexpr int REFERENCE_MAX_THREADS = 256;
    __shared__ double partial[REFERENCE_MAX_THREADS];
    using ktune::dev::from_double;
    using ktune::dev::to_float;
    using ktune::dev::softmax_reference::block_reduce;
    const double sc = scale;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * x_row_stride;
        T* outr = out + r * out_row_stride;
        double m = -__longlong_as_double(0x7FF0000000000000ll);  // -inf (no <cmath> under NVRTC)
        for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmax(m, sc * to_float(xr[c]));
        m = block_reduce<true>(m, partial);
        double s = 0.0;
        for (int c = threadIdx.x; c < cols; c += blockDim.x) s += exp(sc * to_float(xr[c]) - m);
        s = block_reduce<false>(s, partial);
        for (int c = threadIdx.x; c < cols; c += blockDim.x) outr[c] = from_double<T>(exp(sc * to_float(xr[c]) - m) / s);
    }
}
