#pragma once
// Gated linear unit of a transformer MLP (SwiGLU, GeGLU), the tuned kernel.
//
//   out[r, c] = act(gate[r, c]) * up[r, c]        for r < rows, c < cols
//
// act is silu (Act::silu) or gelu with the tanh approximation (Act::gelu_tanh). Layout::split: gate and up are two
// [rows, cols] tensors. Layout::cat: one [rows, 2 * cols] tensor x passed as both gate and up; gate is columns
// 0..cols-1 of a row, up columns cols..2*cols-1 (the kernel adds cols to up's rows). Rows of gate, up and out start
// gate_row_stride, up_row_stride, out_row_stride elements apart; padding is neither read nor written. Math in fp32,
// out rounded once to T (float, __half, __nv_bfloat16).
// Both activations are g * sigmoid(z): z = g (silu) or z = 2 sqrt(2/pi) (g + 0.044715 g^3) (gelu_tanh, since
// 0.5 (1 + tanh(u)) = sigmoid(2u)); sigmoid through __expf and __fdividef, a few ulp in fp32.
// Driven by search_spaces/glu_{swiglu,swiglu_cat,geglu,geglu_cat}.yaml (op glu); reference:
// kernels/glu/glu_reference.cuh (same arguments).
//
// Tunables (template parameters, named as the YAML keys):
//   BLOCK   threads per block: a multiple of 32 in [32, 1024].
//   VEC     elements per vector access: a power of two with VEC * sizeof(T) <= 16; PATH 1 takes 8- or 16-byte
//           accesses, PATH 2 any width from one element (2 or 4 bytes) up.
//   UNROLL  vector accesses of each input a thread has in flight, >= 1, with VEC * UNROLL * sizeof(T) <= 64 (32
//           registers of data for gate and up together). A block covers BLOCK * VEC * UNROLL columns of a row.
//           PATH 2: 1.
//   PATH    1: the general loop below only. 2: one access per input and thread first, for decode sizes (M = 1..16
//           tokens, 1.5-2 us, where the time is latency: kernel start, the instruction fetch of the code before the
//           first load (cold: the L2 flush evicts the code too), one DRAM round trip, the math, the store drain).
//           Block (x, y) does columns [x, x + 1) * BLOCK * VEC of row y, each thread VEC of them. Its loads go out
//           after the address arithmetic alone (~10 instructions, as short as torch.compile's Triton kernel): a
//           thread loads only a whole, aligned access inside its row, so nothing can fault, and the launch-wide
//           conditions are checked while the loads fly: pointers aligned to the access, strides and cols multiples
//           of VEC, the grid one pass (grid.x >= column tiles, grid.y >= rows). If they hold, the threads that loaded
//           are exactly those with work; otherwise it calls the PATH = 1 loop (with 8-byte accesses at least and
//           UNROLL 1) as a __noinline__ function, whose code lies after the fast path. ex2/rcp .approx.ftz without
//           the non-ftz denormal fix-ups.
//           On the H100, same call, against the earlier PATH 2 (its checks before its loads, 8- or 16-byte accesses,
//           UNROLL up to 2): kernel time -6 to -9 % (geomean per space) over the 48 decode-size problems of the four
//           GLU spaces, SwiGLU bf16 M=1 I=8192 1.63 -> 1.54 us (H100, 2026-11-26).
//
// Launch: block = BLOCK threads (1-D); grid.x = ceil_div(cols, BLOCK * VEC * UNROLL) column tiles and grid.y rows;
// both are walked with a grid stride (PATH 2: by its loop when the grid is not one pass), so any grid is correct
// (grid.y <= 65535 covers any row count). No shared memory.
//
// Any cols, stride and alignment is correct. The vector path needs gate, up (+ cols for cat) and out aligned to
// VEC * sizeof(T) bytes and the three strides multiples of VEC (checked once per launch); cols % VEC leftover elements
// of a row are done element-wise by the tile that holds them. Otherwise every row takes the scalar path.
#include "kernels/common/ktune_device.cuh"
#include "kernels/glu/glu_types.cuh"

namespace ktune::dev::glu {

template <Act A>
__device__ __forceinline__ float activate(float g) {
    float z;
    if constexpr (A == Act::silu) {
        z = g;
    } else {
        constexpr float k = 1.5957691216057308f;  // 2 sqrt(2 / pi)
        z = k * fmaf(0.044715f * g, g * g, g);
    }
    // g * sigmoid(z); for z -> -inf, __expf overflows to inf and the quotient is a correctly signed 0.
    return __fdividef(g, 1.0f + __expf(-z));
}

// activate(g) * u for PATH = 2: the same g * sigmoid(z) through ex2.approx.ftz and rcp.approx.ftz (the
// approximations of __expf / __fdividef without their denormal fix-ups); gelu folds 2 sqrt(2/pi) into log2(e).
// Flushed denormals: an ex2 result below 2^-126 only adds to 1; a denominator above 2^126 (|z| > 87) gives g * u * 0,
// within atol of the true |g u| / 2^126. g * u is formed while the MUFU chain runs.
template <Act A>
__device__ __forceinline__ float glu_fast(float g, float u) {
    float x;
    if constexpr (A == Act::silu) {
        x = g * -1.4426950408889634f;  // -z log2(e), z = g
    } else {
        constexpr float k = -2.302208198144325f;  // -2 sqrt(2/pi) log2(e)
        x = fmaf(0.044715f * g, g * g, g) * k;
    }
    float e, r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(x));
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.0f + e));
    return (g * u) * r;
}

// activate(g) * u over W packed words; FAST (PATH = 2): through glu_fast. Packed back to words, so that a whole access
// is stored at once (a struct of 16-bit elements stored whole was split into 2- and 4-byte stores).
template <Act A, typename T, int W, bool FAST = false>
__device__ __forceinline__ Words<W> glu_words(const Words<W>& g, const Words<W>& u) {
    constexpr int E = elems_per_word<T>;
    Words<W> out;
#pragma unroll
    for (int j = 0; j < W; ++j) {
        float fg[E], fu[E], fo[E];
        unpack_word(T{}, g.w[j], fg);
        unpack_word(T{}, u.w[j], fu);
#pragma unroll
        for (int e = 0; e < E; ++e) fo[e] = FAST ? glu_fast<A>(fg[e], fu[e]) : activate<A>(fg[e]) * fu[e];
        out.w[j] = pack_word<T>(fo);
    }
    return out;
}

template <Act A, typename T>
__device__ __forceinline__ void glu_element(T* out, const T* gate, const T* up, int c) {
    out[c] = from_float<T>(activate<A>(to_float(gate[c])) * to_float(up[c]));
}

// The general path (PATH = 1, and PATH = 2 when its fast path does not apply): a grid-stride loop over rows and
// column tiles; gate and up already point at the gate and up halves (cat: up = x + cols).
template <typename T, Act ACT, int BLOCK, int VEC, int UNROLL>
__device__ __forceinline__ void glu_loop(T* __restrict__ out, const T* __restrict__ gate, const T* __restrict__ up,
                                         int rows, int cols, long long gate_row_stride, long long up_row_stride,
                                         long long out_row_stride) {
    constexpr int W = VEC * int(sizeof(T)) / 4;
    constexpr int TILE_VECS = BLOCK * UNROLL;
    constexpr int TILE = TILE_VECS * VEC;  // columns per tile
    constexpr unsigned VEC_BYTES = VEC * sizeof(T);
    // Uniform over the grid: one path per launch.
    const bool vector_ok = is_aligned(gate, VEC_BYTES) && is_aligned(up, VEC_BYTES) && is_aligned(out, VEC_BYTES) &&
                           gate_row_stride % VEC == 0 && up_row_stride % VEC == 0 && out_row_stride % VEC == 0;
    const int nvec = cols / VEC;
    const int tail_start = nvec * VEC;
    const int tail_tile = tail_start / TILE;
    const int tiles = (cols + TILE - 1) / TILE;
    const int t = threadIdx.x;

    for (long long r = blockIdx.y; r < rows; r += gridDim.y) {
        const T* g = gate + r * gate_row_stride;
        const T* u = up + r * up_row_stride;
        T* o = out + r * out_row_stride;
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            if (vector_ok) {
                Words<W> gv[UNROLL], uv[UNROLL];
#pragma unroll
                for (int k = 0; k < UNROLL; ++k) {
                    const int i = tile * TILE_VECS + k * BLOCK + t;
                    if (i < nvec) {
                        gv[k] = load_words<W>(g + static_cast<long long>(i) * VEC);
                        uv[k] = load_words<W>(u + static_cast<long long>(i) * VEC);
                    }
                }
#pragma unroll
                for (int k = 0; k < UNROLL; ++k) {
                    const int i = tile * TILE_VECS + k * BLOCK + t;
                    if (i < nvec)
                        store_words<W>(o + static_cast<long long>(i) * VEC, glu_words<ACT, T, W>(gv[k], uv[k]));
                }
                if (tile == tail_tile && t < cols - tail_start) glu_element<ACT>(o, g, u, tail_start + t);
            } else {
#pragma unroll
                for (int v = 0; v < VEC; ++v) {
                    float gs[UNROLL], us[UNROLL];
#pragma unroll
                    for (int k = 0; k < UNROLL; ++k) {
                        const int c = tile * TILE + (v * UNROLL + k) * BLOCK + t;
                        if (c < cols) {
                            gs[k] = to_float(g[c]);
                            us[k] = to_float(u[c]);
                        }
                    }
#pragma unroll
                    for (int k = 0; k < UNROLL; ++k) {
                        const int c = tile * TILE + (v * UNROLL + k) * BLOCK + t;
                        if (c < cols) o[c] = from_float<T>(activate<ACT>(gs[k]) * us[k]);
                    }
                }
            }
        }
    }
}

// Out of line for PATH = 2: a CALL on the fast path's side instead of the loop's code.
template <typename T, Act ACT, int BLOCK, int VEC, int UNROLL>
__device__ __noinline__ void glu_loop_call(T* out, const T* gate, const T* up, int rows, int cols,
                                           long long gate_row_stride, long long up_row_stride,
                                           long long out_row_stride) {
    glu_loop<T, ACT, BLOCK, VEC, UNROLL>(out, gate, up, rows, cols, gate_row_stride, up_row_stride, out_row_stride);
}

}  // namespace ktune::dev::glu

template <typename T, ktune::dev::glu::Act ACT, ktune::dev::glu::Layout LAYOUT, int BLOCK, int VEC, int UNROLL,
          int PATH>
__global__ void __launch_bounds__(BLOCK)
    glu_fwd(T* __restrict__ out, const T* __restrict__ gate, const T* __restrict__ up, int rows, int cols,
            long long gate_row_stride, long long up_row_stride, long long out_row_stride) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 2, "glu_fwd: T is float, __half or __nv_bfloat16");
    static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0, "glu_fwd: BLOCK a multiple of 32 in [32, 1024]");
    static_assert(VEC >= 1 && (VEC & (VEC - 1)) == 0, "glu_fwd: VEC is a power of two");
    static_assert(VEC * sizeof(T) <= 16, "glu_fwd: VEC * sizeof(T) <= 16");
    static_assert(PATH == 2 || VEC * sizeof(T) >= 8,
                  "glu_fwd: VEC * sizeof(T) >= 8 on PATH 1 (narrower accesses are not tuned)");
    static_assert(UNROLL >= 1, "glu_fwd: UNROLL >= 1");
    static_assert(VEC * UNROLL * sizeof(T) <= 64, "glu_fwd: VEC * UNROLL * sizeof(T) <= 64 (registers)");
    static_assert(PATH == 1 || PATH == 2, "glu_fwd: PATH is 1 (general loop) or 2 (one access per thread first)");
    static_assert(PATH == 1 || UNROLL == 1, "glu_fwd: PATH 2 makes one access per input and thread (UNROLL 1)");

    using namespace ktune::dev;
    if constexpr (LAYOUT == glu::Layout::cat) up += cols;
    if constexpr (PATH == 2) {
        constexpr unsigned BYTES = VEC * sizeof(T);
        constexpr int TILE = BLOCK * VEC;  // columns per block
        const unsigned t = threadIdx.x, bx = blockIdx.x, by = blockIdx.y;
        // 64-bit: a grid wider than the row (any grid is allowed) must not wrap into another column.
        const long long c = (static_cast<long long>(bx) * BLOCK + t) * VEC;
        const T* g = gate + by * gate_row_stride + c;
        const T* u = up + by * up_row_stride + c;
        // The loads before any check that needs the other arguments. A thread loads only a whole access inside its
        // own row, and only if it is aligned, so nothing it reads can fault whatever the launch; the launch-wide
        // conditions (one predicate, bitwise &: no short-circuit branches) are worked out while the loads fly.
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
        // Every access aligned and whole (no tail) and the grid one pass over rows and columns: then the threads
        // that loaded are exactly those with work. Otherwise the general loop does it all (its code lies out of line).
        const bool fast = all_aligned(BYTES, gate, up, out) &
                          (((gate_row_stride | up_row_stride | out_row_stride | cols) & (VEC - 1)) == 0) &
                          (cols >= 0) & (gridDim.x >= (static_cast<unsigned>(cols) + (TILE - 1u)) / TILE) &
                          (gridDim.y >= static_cast<unsigned>(rows));
        if (!fast) {
            constexpr int LOOP_VEC = BYTES >= 8 ? VEC : 8 / int(sizeof(T));
            glu::glu_loop_call<T, ACT, BLOCK, LOOP_VEC, 1>(out, gate, up, rows, cols, gate_row_stride,
                                                           up_row_stride, out_row_stride);
            return;
        }
        if (!mine) return;
        T* o = out + by * out_row_stride + c;
        if constexpr (BYTES >= 4)
            store_words_whole<W>(o, glu::glu_words<ACT, T, W, true>(gv, uv));
        else
            *o = from_float<T>(glu::glu_fast<ACT>(to_float(gs), to_float(us)));
        return;
    }
    if constexpr (PATH == 1)
        glu::glu_loop<T, ACT, BLOCK, VEC, UNROLL>(out, gate, up, rows, cols, gate_row_stride, up_row_stride,
                                                  out_row_stride);
}
