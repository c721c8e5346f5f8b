#pragma once
// Gated linear unit, the reference the tuned kernels are validated against (same arguments as glu_fwd_loop and
// glu_fwd_loads_first; kernels/glu/glu_common.cuh states the operation). Plain and obviously correct: element
// accesses, the activation from its textbook formula in double (silu(g) = g / (1 + exp(-g)); gelu_tanh(g) = 0.5 g
// (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))), out rounded once to T. Padding columns are not touched.
// Launch (search_spaces/glu_*.yaml reference_launch): any 1-D block and grid; blocks loop over rows, threads over
// columns. grid = M gives one row per block.
#include "kernels/common/ktune_device.cuh"
#include "kernels/glu/glu_types.cuh"

template <typename T, ktune::dev::glu::Act ACT, ktune::dev::glu::Layout LAYOUT>
__global__ void glu_fwd_reference(T* out, const T* gate, const T* up, int rows, int cols, long long gate_row_stride,
                                  long long up_row_stride, long long out_row_stride) {
    using ktune::dev::from_double;
    using ktune::dev::to_float;
    const long long up_offset = LAYOUT == ktune::dev::glu::Layout::cat ? cols : 0;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        for (int c = threadIdx.x; c < cols; c += blockDim.x) {
            const double g = to_float(gate[r * gate_row_stride + c]);
            const double u = to_float(up[r * up_row_stride + up_offset + c]);
            double a;
            if (ACT == ktune::dev::glu::Act::silu)
                a = g / (1.0 + exp(-g));
            else
                a = 0.5 * g * (1.0 + tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)));
            out[r * out_row_stride + c] = from_double<T>(a * u);
        }
    }
}
