#pragma once
// Gated linear unit (SwiGLU, GeGLU), the general kernel: a grid-stride loop over rows and column tiles, UNROLL
// accesses of each input in flight per thread. Operation, layouts, launch and alignment: glu_common.cuh. Driven by
// search_spaces/glu_{swiglu,swiglu_cat,geglu,geglu_cat}.yaml (alternative loop).
//
// Tunables (template parameters, named as the YAML keys):
//   BLOCK   threads per block: a multiple of 32 in [32, 1024].
//   VEC     elements per vector access: a power of two with 8 <= VEC * sizeof(T) <= 16.
//   UNROLL  vector accesses of each input a thread has in flight, >= 1, with VEC * UNROLL * sizeof(T) <= 64 (32
//           registers of data for gate and up together). A block covers BLOCK * VEC * UNROLL columns of a row.
#include "kernels/glu/glu_common.cuh"
#include "kernels/common/dependent_launch.cuh"

template <typename T, ktune::dev::glu::Act ACT, ktune::dev::glu::Layout LAYOUT, int BLOCK, int VEC, int UNROLL>
__global__ void __launch_bounds__(BLOCK)
    glu_fwd_loop(T* __restrict__ out, const T* __restrict__ gate, const T* __restrict__ up, int rows, int cols,
                 long long gate_row_stride, long long up_row_stride, long long out_row_stride) {
    // Programmatic launch (dependent_launch.cuh): nothing read or written before the kernel before is done; the next
    // one may start its own early part now.
    ktune::dev::wait_prior_grids();
    ktune::dev::launch_dependents();
    static_assert(sizeof(T) == 4 || sizeof(T) == 2, "glu_fwd_loop: T is float, __half or __nv_bfloat16");
    static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0,
                  "glu_fwd_loop: BLOCK a multiple of 32 in [32, 1024]");
    static_assert(VEC >= 1 && (VEC & (VEC - 1)) == 0, "glu_fwd_loop: VEC is a power of two");
    static_assert(VEC * sizeof(T) <= 16, "glu_fwd_loop: VEC * sizeof(T) <= 16");
    static_assert(VEC * sizeof(T) >= 8, "glu_fwd_loop: VEC * sizeof(T) >= 8 (narrower accesses are not tuned)");
    static_assert(UNROLL >= 1, "glu_fwd_loop: UNROLL >= 1");
    static_assert(VEC * UNROLL * sizeof(T) <= 64, "glu_fwd_loop: VEC * UNROLL * sizeof(T) <= 64 (registers)");

    using namespace ktune::dev;
    if constexpr (LAYOUT == glu::Layout::cat) up += cols;
    glu::glu_loop<T, ACT, BLOCK, VEC, UNROLL>(out, gate, up, rows, cols, gate_row_stride, up_row_stride,
                                              out_row_stride);
}
