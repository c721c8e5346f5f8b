#pragma once
// SwiGLU backward (op glu/swiglu_bwd, kernels/glu/glu_swiglu_bwd.op.yaml; search space
// search_spaces/glu_swiglu_bwd.yaml): the gradients of out = silu(gate) * up from dy = dL/dout, with s = sigmoid(g):
//
//   dup[r, c]   = dy * g * s
//   dgate[r, c] = dy * u * s * (1 + g * (1 - s))          g = gate[r, c], u = up[r, c], dy = dy[r, c]
//
// for r < rows, c < cols. Rows of each buffer start its own row stride apart (elements); padding is neither read nor
// written. With strides 2 * cols, gate and up are the two halves of one fused gate_up row and dgate, dup the two halves
// of one gradient row (the caller passes base and base + cols). Math in fp32, each output rounded once to T (float,
// __half, __nv_bfloat16). s through __expf and __fdividef as the forward (glu_common.cuh's activate); 1 - s as e * s
// (e = exp(-g)) where s >= 1/2, so that it keeps its relative accuracy where s is near 1.
//
// A grid-stride loop over rows and column tiles, as the forward's loop kernel (glu_fwd_loop.cuh): UNROLL vector
// accesses of each of the three inputs in flight per thread, then the math and the two stores.
//
// Tunables (template parameters, named as the YAML keys):
//   BLOCK   threads per block: a multiple of 32 in [32, 1024].
//   VEC     elements per vector access: a power of two with 8 <= VEC * sizeof(T) <= 16.
//   UNROLL  vector accesses of each input a thread has in flight, >= 1, with VEC * UNROLL * sizeof(T) <= 64 (48
//           registers of data for gate, up and dy together). A block covers BLOCK * VEC * UNROLL columns of a row.
//
// Launch: block = BLOCK threads (1-D); grid.x = ceil_div(cols, BLOCK * VEC * UNROLL) column tiles and grid.y rows;
// both are walked with a grid stride, so any grid is correct (grid.y <= 65535 covers any row count). No shared memory.
// Any cols, stride and alignment is correct. The vector path needs the five pointers aligned to VEC * sizeof(T) bytes
// and the five strides multiples of VEC (checked once per launch); the cols % VEC leftover elements of a row are done
// element-wise by the tile that holds them. Otherwise every row takes the scalar path.
#include "kernels/common/dependent_launch.cuh"
#include "kernels/common/ktune_device.cuh"

namespace ktune::dev::glu {

// The two gradients of silu(g) * u at one element, in fp32.
__device__ __forceinline__ void swiglu_grads(float g, float u, float dy, float& dgate, float& dup) {
    // For g -> -inf, e overflows to inf and s is 0 (__fdividef(1, inf)); 1 - s is then taken as 1 - s, never inf * 0.
    const float e = __expf(-g);
    const float s = __fdividef(1.0f, 1.0f + e);
    const float one_minus_s = g < 0.0f ? 1.0f - s : e * s;  // e s = e / (1 + e) = 1 - s
    const float dys = dy * s;
    dup = dys * g;
    dgate = dys * u * fmaf(g, one_minus_s, 1.0f);
}

// VEC elements' gradients from W packed words of each input, packed back to words (whole-access stores).
template <typename T, int W>
__device__ __forceinline__ void swiglu_bwd_words(Words<W>& dgate, Words<W>& dup, const Words<W>& g, const Words<W>& u,
                                                 const Words<W>& dy) {
    constexpr int E = elems_per_word<T>;
#pragma unroll
    for (int j = 0; j < W; ++j) {
        float fg[E], fu[E], fd[E], og[E], ou[E];
        unpack_word(T{}, g.w[j], fg);
        unpack_word(T{}, u.w[j], fu);
        unpack_word(T{}, dy.w[j], fd);
#pragma unroll
        for (int e = 0; e < E; ++e) swiglu_grads(fg[e], fu[e], fd[e], og[e], ou[e]);
        dgate.w[j] = pack_word<T>(og);
        dup.w[j] = pack_word<T>(ou);
    }
}

// Column c of one row (the pointers at the row's start).
template <typename T>
__device__ __forceinline__ void swiglu_bwd_element(T* dgate, T* dup, const T* gate, const T* up, const T* dy, int c) {
    float og, ou;
    swiglu_grads(to_float(gate[c]), to_float(up[c]), to_float(dy[c]), og, ou);
    dgate[c] = from_float<T>(og);
    dup[c] = from_float<T>(ou);
}

}  // namespace ktune::dev::glu

template <typename T, int BLOCK, int VEC, int UNROLL>
__global__ void __launch_bounds__(BLOCK)
    glu_swiglu_bwd_loop(T* __restrict__ dgate, T* __restrict__ dup, const T* __restrict__ gate,
                        const T* __restrict__ up, const T* __restrict__ dy, int rows, int cols,
                        long long gate_row_stride, long long up_row_stride, long long dy_row_stride,
                        long long dgate_row_stride, long long dup_row_stride) {
    // Programmatic launch (dependent_launch.cuh): nothing read or written before the kernel before is done; the next
    // one may start its own early part now.
    ktune::dev::wait_prior_grids();
    ktune::dev::launch_dependents();
    static_assert(sizeof(T) == 4 || sizeof(T) == 2, "glu_swiglu_bwd_loop: T is float, __half or __nv_bfloat16");
    static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0,
                  "glu_swiglu_bwd_loop: BLOCK a multiple of 32 in [32, 1024]");
    static_assert(VEC >= 1 && (VEC & (VEC - 1)) == 0, "glu_swiglu_bwd_loop: VEC is a power of two");
    static_assert(VEC * sizeof(T) <= 16, "glu_swiglu_bwd_loop: VEC * sizeof(T) <= 16");
    static_assert(VEC * sizeof(T) >= 8, "glu_swiglu_bwd_loop: VEC * sizeof(T) >= 8 (narrower accesses are not tuned)");
    static_assert(UNROLL >= 1, "glu_swiglu_bwd_loop: UNROLL >= 1");
    static_assert(VEC * UNROLL * sizeof(T) <= 64, "glu_swiglu_bwd_loop: VEC * UNROLL * sizeof(T) <= 64 (registers)");

    using namespace ktune::dev;
    constexpr int W = VEC * int(sizeof(T)) / 4;
    constexpr int TILE_VECS = BLOCK * UNROLL;
    constexpr int TILE = TILE_VECS * VEC;  // columns per tile
    constexpr unsigned VEC_BYTES = VEC * sizeof(T);
    // Uniform over the grid: one path per launch.
    const bool vector_ok = all_aligned(VEC_BYTES, gate, up, dy, dgate, dup) &&
                           ((gate_row_stride | up_row_stride | dy_row_stride | dgate_row_stride | dup_row_stride) &
                            (VEC - 1)) == 0;
    const int nvec = cols / VEC;
    const int tail_start = nvec * VEC;
    const int tail_tile = tail_start / TILE;
    const int tiles = (cols + TILE - 1) / TILE;
    const int t = threadIdx.x;

    for (long long r = blockIdx.y; r < rows; r += gridDim.y) {
        const T* g = gate + r * gate_row_stride;
        const T* u = up + r * up_row_stride;
        const T* d = dy + r * dy_row_stride;
        T* dg = dgate + r * dgate_row_stride;
        T* du = dup + r * dup_row_stride;
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            if (vector_ok) {
                Words<W> gv[UNROLL], uv[UNROLL], dv[UNROLL];
#pragma unroll
                for (int k = 0; k < UNROLL; ++k) {
                    const int i = tile * TILE_VECS + k * BLOCK + t;
                    if (i < nvec) {
                        gv[k] = load_words<W>(g + static_cast<long long>(i) * VEC);
                        uv[k] = load_words<W>(u + static_cast<long long>(i) * VEC);
                        dv[k] = load_words<W>(d + static_cast<long long>(i) * VEC);
                    }
                }
#pragma unroll
                for (int k = 0; k < UNROLL; ++k) {
                    const int i = tile * TILE_VECS + k * BLOCK + t;
                    if (i < nvec) {
                        Words<W> gw, uw;
                        glu::swiglu_bwd_words<T, W>(gw, uw, gv[k], uv[k], dv[k]);
                        store_words<W>(dg + static_cast<long long>(i) * VEC, gw);
                        store_words<W>(du + static_cast<long long>(i) * VEC, uw);
                    }
                }
                if (tile == tail_tile && t < cols - tail_start)
                    glu::swiglu_bwd_element<T>(dg, du, g, u, d, tail_start + t);
            } else {
#pragma unroll
                for (int v = 0; v < VEC; ++v) {
                    float gs[UNROLL], us[UNROLL], ds[UNROLL];
#pragma unroll
                    for (int k = 0; k < UNROLL; ++k) {
                        const int c = tile * TILE + (v * UNROLL + k) * BLOCK + t;
                        if (c < cols) {
                            gs[k] = to_float(g[c]);
                            us[k] = to_float(u[c]);
                            ds[k] = to_float(d[c]);
                        }
                    }
#pragma unroll
                    for (int k = 0; k < UNROLL; ++k) {
                        const int c = tile * TILE + (v * UNROLL + k) * BLOCK + t;
                        if (c < cols) {
                            float og, ou;
                            glu::swiglu_grads(gs[k], us[k], ds[k], og, ou);
                            dg[c] = from_float<T>(og);
                            du[c] = from_float<T>(ou);
                        }
                    }
                }
            }
        }
    }
}
