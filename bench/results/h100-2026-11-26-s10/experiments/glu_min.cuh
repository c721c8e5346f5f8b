#pragma once
// Session 10 experiment (not a tuned kernel): how far below glu_fwd's PATH 2 a GLU gets at decode sizes when the code
// is as short as torch.compile's Triton kernel (SwiGLU bf16 M=1 I=8192: 9 SASS instructions to the first load, 40 in
// all, one or two elements per thread; bench/results/h100-2026-11-26-s10/sass-probe/). Same arguments as glu_fwd.
//   FLAVOR 1: contiguous rows assumed (row y starts y * cols in): wrong for padded rows, measures the floor.
//   FLAVOR 2: row strides (64-bit), no checks: wrong for misaligned pointers.
//   FLAVOR 3: FLAVOR 2 behind one uniform predicate (alignment, strides, one pass), else glu_fwd's general loop.
// EPT elements per thread (one access of EPT * sizeof(T) bytes); a block covers BLOCK * EPT columns of one row.
// (Measured with its own copy of Pack and its load; they now come from glu_fwd.cuh, where PATH 2 uses them.)
#include "kernels/glu/glu_fwd.cuh"


template <typename T, ktune::dev::glu::Act ACT, int BLOCK, int EPT, int FLAVOR>
__global__ void __launch_bounds__(BLOCK)
    glu_min(T* __restrict__ out, const T* __restrict__ gate, const T* __restrict__ up, int rows, int cols,
            long long gate_row_stride, long long up_row_stride, long long out_row_stride) {
    using namespace ktune::dev;
    using P = glu::Pack<T, EPT>;
    static_assert(EPT * sizeof(T) <= 16, "glu_min: at most 16 bytes per access");
    const unsigned t = threadIdx.x, bx = blockIdx.x, by = blockIdx.y;
    if constexpr (FLAVOR == 3) {
        constexpr unsigned BYTES = EPT * sizeof(T);
        const bool fast = (((reinterpret_cast<unsigned long long>(gate) | reinterpret_cast<unsigned long long>(up) |
                             reinterpret_cast<unsigned long long>(out)) & (BYTES - 1)) == 0) &
                          (((gate_row_stride | up_row_stride | out_row_stride | cols) & (EPT - 1)) == 0) &
                          (gridDim.x * unsigned(BLOCK * EPT) >= unsigned(cols)) & (gridDim.y >= unsigned(rows));
        if (!fast) {
            glu::glu_loop_call<T, ACT, BLOCK, 8 / sizeof(T), 1>(out, gate, up, rows, cols, gate_row_stride,
                                                               up_row_stride, out_row_stride);
            return;
        }
    }
    const unsigned c = (bx * BLOCK + t) * EPT;
    if ((by >= unsigned(rows)) | (c >= unsigned(cols))) return;
    const T* g;
    const T* u;
    T* o;
    if constexpr (FLAVOR == 1) {
        const unsigned long long e = static_cast<unsigned long long>(by) * unsigned(cols) + c;
        g = gate + e;
        u = up + e;
        o = out + e;
    } else {
        g = gate + by * gate_row_stride + c;
        u = up + by * up_row_stride + c;
        o = out + by * out_row_stride + c;
    }
    const P gv = glu::load_pack_nc<T, EPT>(g);
    const P uv = glu::load_pack_nc<T, EPT>(u);
    P ov;
#pragma unroll
    for (int e = 0; e < EPT; ++e)
        ov.v[e] = from_float<T>(glu::glu_fast<ACT>(to_float(gv.v[e]), to_float(uv.v[e])));
    *reinterpret_cast<P*>(o) = ov;
}
