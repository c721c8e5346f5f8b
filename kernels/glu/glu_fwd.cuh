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
//   VEC     elements per vector access: a power of two with 8 <= VEC * sizeof(T) <= 16 (8- or 16-byte accesses).
//   UNROLL  vector accesses of each input a thread has in flight, >= 1, with VEC * UNROLL * sizeof(T) <= 64 (32
//           registers of data for gate and up together). A block covers BLOCK * VEC * UNROLL columns of a row.
//
// Launch: block = BLOCK threads (1-D); grid.x = ceil_div(cols, BLOCK * VEC * UNROLL) column tiles and grid.y rows;
// both are walked with a grid stride, so any grid is correct (grid.y <= 65535 covers any row count). No shared memory.
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

template <Act A, typename T, int W>
__device__ __forceinline__ Words<W> glu_words(const Words<W>& g, const Words<W>& u) {
    constexpr int E = elems_per_word<T>;
    Words<W> out;
#pragma unroll
    for (int j = 0; j < W; ++j) {
        float fg[E], fu[E], fo[E];
        unpack_word(T{}, g.w[j], fg);
        unpack_word(T{}, u.w[j], fu);
#pragma unroll
        for (int e = 0; e < E; ++e) fo[e] = activate<A>(fg[e]) * fu[e];
        out.w[j] = pack_word<T>(fo);
    }
    return out;
}

template <Act A, typename T>
__device__ __forceinline__ void glu_element(T* out, const T* gate, const T* up, int c) {
    out[c] = from_float<T>(activate<A>(to_float(gate[c])) * to_float(up[c]));
}

}  // namespace ktune::dev::glu

template <typename T, ktune::dev::glu::Act ACT, ktune::dev::glu::Layout LAYOUT, int BLOCK, int VEC, int UNROLL>
__global__ void __launch_bounds__(BLOCK)
    glu_fwd(T* __restrict__ out, const T* __restrict__ gate, const T* __restrict__ up, int rows, int cols,
            long long gate_row_stride, long long up_row_stride, long long out_row_stride) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 2, "glu_fwd: T is float, __half or __nv_bfloat16");
    static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0, "glu_fwd: BLOCK a multiple of 32 in [32, 1024]");
    static_assert(VEC >= 1 && (VEC & (VEC - 1)) == 0, "glu_fwd: VEC is a power of two");
    static_assert(VEC * sizeof(T) <= 16, "glu_fwd: VEC * sizeof(T) <= 16");
    static_assert(VEC * sizeof(T) >= 8, "glu_fwd: VEC * sizeof(T) >= 8 (narrower accesses are not tuned)");
    static_assert(UNROLL >= 1, "glu_fwd: UNROLL >= 1");
    static_assert(VEC * UNROLL * sizeof(T) <= 64, "glu_fwd: VEC * UNROLL * sizeof(T) <= 64 (registers)");

    using namespace ktune::dev;
    constexpr int W = VEC * int(sizeof(T)) / 4;
    constexpr int TILE_VECS = BLOCK * UNROLL;
    constexpr int TILE = TILE_VECS * VEC;  // columns per tile
    if constexpr (LAYOUT == glu::Layout::cat) up += cols;
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
                        store_words<W>(o + static_cast<long long>(i) * VEC, glu::glu_words<ACT, T, W>(gv[k], uv[k]));
                }
                if (tile == tail_tile && t < cols - tail_start) glu::glu_element<ACT>(o, g, u, tail_start + t);
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
                        if (c < cols) o[c] = from_float<T>(glu::activate<ACT>(gs[k]) * us[k]);
                    }
                }
            }
        }
    }
}
