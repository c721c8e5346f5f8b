#pragma once
// Gated linear unit (SwiGLU, GeGLU), the loads-first kernel for decode sizes (M = 1..16 tokens, 1.5-2 us, where the
// time is latency: kernel start, the instruction fetch of the code before the first load (cold: the L2 flush evicts
// the code too), one DRAM round trip, the math, the store drain). Operation and layouts: glu_common.cuh. Driven by
// search_spaces/glu_{swiglu,swiglu_cat,geglu,geglu_cat}.yaml (alternative loads_first).
//
// Block (x, y) does columns [x, x + 1) * BLOCK * VEC of row y, each thread VEC of them, one access per input. Its
// loads go out after the address arithmetic alone (~10 instructions, as short as torch.compile's Triton kernel): a
// thread loads only a whole, aligned access inside its row, so nothing can fault, and the launch-wide conditions are
// checked while the loads fly: pointers aligned to the access, strides and cols multiples of VEC, the grid one pass
// (grid.x >= column tiles, grid.y >= rows). If they hold, the threads that loaded are exactly those with work;
// otherwise it calls the general loop (glu_common.cuh, with 8-byte accesses at least and UNROLL 1) as a __noinline__
// function, whose code lies after the fast path. ex2/rcp .approx.ftz without the non-ftz denormal fix-ups.
// On the H100, same call, against an earlier version (its checks before its loads, 8- or 16-byte accesses, UNROLL up
// to 2): kernel time -6 to -9 % (geomean per space) over the 48 decode-size problems of the four GLU spaces, SwiGLU
// bf16 M=1 I=8192 1.63 -> 1.54 us (H100, 2026-11-26).
//
// Tunables (template parameters, named as the YAML keys):
//   BLOCK   threads per block: a multiple of 32 in [32, 1024].
//   VEC     elements per access: a power of two with VEC * sizeof(T) <= 16, any width from one element (2 or 4
//           bytes) up.
//
// Launch: block = BLOCK threads (1-D); grid.x = ceil_div(cols, BLOCK * VEC) column tiles and grid.y rows; any other
// grid is correct (the general loop walks it). No shared memory.
#include "kernels/glu/glu_common.cuh"
#include "kernels/common/dependent_launch.cuh"

template <typename T, ktune::dev::glu::Act ACT, ktune::dev::glu::Layout LAYOUT, int BLOCK, int VEC>
__global__ void __launch_bounds__(BLOCK)
    glu_fwd_loads_first(T* __restrict__ out, const T* __restrict__ gate, const T* __restrict__ up, int rows,
                        int cols, long long gate_row_stride, long long up_row_stride, long long out_row_stride) {
    // Programmatic launch (dependent_launch.cuh): nothing read or written before the kernel before is done; the next
    // one may start its own early part now.
    ktune::dev::wait_prior_grids();
    ktune::dev::launch_dependents();
    static_assert(sizeof(T) == 4 || sizeof(T) == 2, "glu_fwd_loads_first: T is float, __half or __nv_bfloat16");
    static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0,
                  "glu_fwd_loads_first: BLOCK a multiple of 32 in [32, 1024]");
    static_assert(VEC >= 1 && (VEC & (VEC - 1)) == 0, "glu_fwd_loads_first: VEC is a power of two");
    static_assert(VEC * sizeof(T) <= 16, "glu_fwd_loads_first: VEC * sizeof(T) <= 16");

    using namespace ktune::dev;
    if constexpr (LAYOUT == glu::Layout::cat) up += cols;
    constexpr unsigned BYTES = VEC * sizeof(T);
    constexpr int TILE = BLOCK * VEC;  // columns per block
    const unsigned t = threadIdx.x, bx = blockIdx.x, by = blockIdx.y;
    // 64-bit: a grid wider than the row (any grid is allowed) must not wrap into another column.
    const long long c = (static_cast<long long>(bx) * BLOCK + t) * VEC;
    const T* g = gate + by * gate_row_stride + c;
    const T* u = up + by * up_row_stride + c;
    // The loads before any check that needs the other arguments. A thread loads only a whole access inside its own
    // row, and only if it is aligned, so nothing it reads can fault whatever the launch; the launch-wide conditions
    // (one predicate, bitwise &: no short-circuit branches) are worked out while the loads fly.
    const bool mine = (static_cast<int>(by) < rows) & (c + VEC <= cols) & all_aligned(BYTES, g, u);
    // Words for accesses of 4 bytes and more; a 2-byte access (one 16-bit element) is that element.
    constexpr int W = BYTES >= 4 ? int(BYTES) / 4 : 1;
    Words<W> gv, uv;
    T gs, us;
    if (mine) {
        if constexpr (BYTES >= 4) {
            gv = load_words_nc<W>(g);
            uv = load_words_nc<W>(u);
        } else {
            gs = __ldg(g);
            us = __ldg(u);
        }
    }
    // Every access aligned and whole (no tail) and the grid one pass over rows and columns: then the threads that
    // loaded are exactly those with work. Otherwise the general loop does it all (its code lies out of line).
    const bool fast = all_aligned(BYTES, gate, up, out) &
                      (((gate_row_stride | up_row_stride | out_row_stride | cols) & (VEC - 1)) == 0) &
                      (cols >= 0) & (gridDim.x >= (static_cast<unsigned>(cols) + (TILE - 1u)) / TILE) &
                      (gridDim.y >= static_cast<unsigned>(rows));
    if (!fast) {
        constexpr int LOOP_VEC = BYTES >= 8 ? VEC : 8 / int(sizeof(T));
        glu::glu_loop_call<T, ACT, BLOCK, LOOP_VEC, 1>(out, gate, up, rows, cols, gate_row_stride, up_row_stride,
                                                       out_row_stride);
        return;
    }
    if (!mine) return;
    T* o = out + by * out_row_stride + c;
    if constexpr (BYTES >= 4)
        store_words_whole<W>(o, glu::glu_words<ACT, T, W, true>(gv, uv));
    else
        *o = from_float<T>(glu::glu_fast<ACT>(to_float(gs), to_float(us)));
}
