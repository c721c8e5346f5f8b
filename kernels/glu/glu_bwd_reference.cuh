#pragma once
// SwiGLU backward, the reference glu/swiglu_bwd is validated against (same arguments as glu_swiglu_bwd_loop,
// kernels/glu/glu_bwd_loop.cuh, which states the operation). Plain and obviously correct: element accesses, the
// textbook formulas in double (s = 1 / (1 + exp(-g)); dup = dy g s; dgate = dy u s (1 + g (1 - s))), each output
// rounded once to T. Padding columns are not touched.
// Launch (search_spaces/glu_swiglu_bwd.yaml reference_launch): any 1-D block and grid; blocks loop over rows, threads
// over columns. grid = M gives one row per block.
#include "kernels/common/ktune_device.cuh"

template <typename T>
__global__ void glu_swiglu_bwd_reference(T* dgate, T* dup, const T* gate, const T* up, const T* dy, int rows, int cols,
                                         long long gate_row_stride, long long up_row_stride, long long dy_row_stride,
                                         long long dgate_row_stride, long long dup_row_stride) {
    using ktune::dev::from_double;
    using ktune::dev::to_float;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        for (int c = threadIdx.x; c < cols; c += blockDim.x) {
            const double g = to_float(gate[r * gate_row_stride + c]);
            const double u = to_float(up[r * up_row_stride + c]);
            const double d = to_float(dy[r * dy_row_stride + c]);
            const double s = 1.0 / (1.0 + exp(-g));
            dup[r * dup_row_stride + c] = from_double<T>(d * g * s);
            dgate[r * dgate_row_stride + c] = from_double<T>(d * u * s * (1.0 + g * (1.0 - s)));
        }
    }
}
