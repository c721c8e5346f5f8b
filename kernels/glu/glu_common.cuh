#pragma once
// Gated linear unit of a transformer MLP (SwiGLU, GeGLU): what both tuned kernels share.
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
// The kernels, alternatives of search_spaces/glu_{swiglu,swiglu_cat,geglu,geglu_cat}.yaml (op glu), take the same
// arguments: glu_fwd_loop.cuh (the general loop) and glu_fwd_loads_first.cuh (decode sizes); reference:
// kernels/glu/glu_reference.cuh.
//
// The general loop below (glu_loop) is the whole of the loop kernel and the loads-first kernel's fallback.
// Launch: block = BLOCK threads (1-D); grid.x = ceil_div(cols, BLOCK * VEC * UNROLL) column tiles and grid.y rows;
// both are walked with a grid stride, so any grid is correct (grid.y <= 65535 covers any row count). No shared memory.
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

// activate(g) * u for the loads-first kernel: the same g * sigmoid(z) through ex2.approx.ftz and rcp.approx.ftz (the
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

// activate(g) * u over W packed words; FAST (the loads-first kernel): through glu_fast. Packed back to words, so that
// a whole access is stored at once (a struct of 16-bit elements stored whole was split into 2- and 4-byte stores).
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

// The general path (the loop kernel, and the loads-first kernel when its fast path does not apply): a grid-stride
// loop over rows and column tiles; gate and up already point at the gate and up halves (cat: up = x + cols).
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

// Out of line for the loads-first kernel: a CALL on the fast path's side instead of the loop's code.
template <typename T, Act ACT, int BLOCK, int VEC, int UNROLL>
__device__ __noinline__ void glu_loop_call(T* out, const T* gate, const T* up, int rows, int cols,
                                           long long gate_row_stride, long long up_row_stride,
                                           long long out_row_stride) {
    glu_loop<T, ACT, BLOCK, VEC, UNROLL>(out, gate, up, rows, cols, gate_row_stride, up_row_stride, out_row_stride);
}

}  // namespace ktune::dev::glu
