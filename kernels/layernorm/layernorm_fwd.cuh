#pragma once
// LayerNorm forward, the tuned kernels. For r < rows, c < hidden:
//
//   mean[r] = mean_c(x[r, :]),  var[r] = mean_c((x[r, :] - mean[r])^2),  rstd[r] = rsqrt(var[r] + eps)
//   y[r, c] = (x[r, c] - mean[r]) * rstd[r] * w[c] + b[c]                 (no "+ b[c]" in layernorm_fwd_nobias)
//
// Two reductions over the register-held row: the mean, then the squared deviations from it (not E[x^2] - E[x]^2,
// which cancels catastrophically when |mean| >> std). fp32 throughout; y rounded once to T. x and y rows start their
// row stride apart (elements, >= hidden); padding columns are never read or written. T: float, __half, __nv_bfloat16.
//   layernorm_fwd         search_spaces/layernorm.yaml (op layernorm, variant fwd)
//   layernorm_fwd_nobias  search_spaces/layernorm_nobias.yaml (variant fwd_nobias)
// Reference: kernels/layernorm/layernorm_reference.cuh.
//
// Tunables (template parameters, named as the YAML keys):
//   BLOCK           threads per block: a multiple of 32 * ROWS_PER_BLOCK, at most 1024.
//   VEC             elements per vector access: a power of two with VEC * sizeof(T) <= 16; the vector path needs
//                   accesses of at least 4 bytes (VEC 1 for 16-bit types always takes the scalar path).
//   UNROLL          vector accesses each thread holds per row, 1..32. The vector path keeps the row in registers
//                   (threads_per_row * VEC * UNROLL >= hidden); otherwise the scalar path runs (three sweeps: mean,
//                   deviations, output; correct, slow): the YAML keeps such configurations out.
//   ROWS_PER_BLOCK  rows a block works on at once: threads_per_row = BLOCK / ROWS_PER_BLOCK, a multiple of 32.
//
// Launch: block = BLOCK threads (1-D), any grid (blocks loop over row groups); ceil_div(M, ROWS_PER_BLOCK) gives one
// group per block. Static shared memory only. The vector path needs x, y, w, b aligned to VEC * sizeof(T) bytes and
// both row strides multiples of VEC (checked once per launch); otherwise every row takes the scalar path.
#include "kernels/common/ktune_device.cuh"

namespace ktune::dev::layernorm {

struct Dims {
    int rows, hidden;
    long long x_stride, y_stride;
    float inv_hidden, eps;
};

// The vector path: the row in registers as loaded words; sum -> mean, squared deviations -> rstd, then y. Two group
// reductions, through the two halves of a double buffer (see group_sum). Every thread of the block calls it once per
// row group.
template <typename T, int TPR, int V, int U, bool HAS_BIAS>
__device__ __forceinline__ void row_vector(T* __restrict__ yr, const T* __restrict__ xr, const T* __restrict__ w,
                                           const T* __restrict__ b, bool active, const Dims& d, int t, float* red0,
                                           float* red1) {
    constexpr int W = V * int(sizeof(T)) / 4;
    constexpr int E = elems_per_word<T>;
    static_assert(W >= 1 && W * 4 == V * int(sizeof(T)), "layernorm vector path: accesses of 4, 8 or 16 bytes");
    // w (and b) go out ahead of the reductions while they cost at most 16 registers.
    constexpr bool PRELOAD = W * U * (HAS_BIAS ? 2 : 1) <= 16;
    const int nvec = d.hidden / V;
    const int tail_start = nvec * V;
    const bool has_tail = t < d.hidden - tail_start;

    Words<W> xv[U];
    Words<W> wv[PRELOAD ? U : 1], bv[PRELOAD && HAS_BIAS ? U : 1];
    float x_tail = 0.0f, sum = 0.0f;
    if (active) {
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = u * TPR + t;
            xv[u] = i < nvec ? load_words<W>(xr + static_cast<long long>(i) * V) : zero_words<W>();
        }
        if constexpr (PRELOAD) {
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int i = u * TPR + t;
                wv[u] = i < nvec ? load_words<W>(w + static_cast<long long>(i) * V) : zero_words<W>();
                if constexpr (HAS_BIAS)
                    bv[u] = i < nvec ? load_words<W>(b + static_cast<long long>(i) * V) : zero_words<W>();
            }
        }
        if (has_tail) x_tail = to_float(xr[tail_start + t]);
        sum = x_tail;
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int j = 0; j < W; ++j) {
                float f[E];
                unpack_word(T{}, xv[u].w[j], f);
#pragma unroll
                for (int e = 0; e < E; ++e) sum += f[e];
            }
    }
    const float mean = group_sum<TPR / 32>(sum, red0) * d.inv_hidden;
    float dev = 0.0f;
    if (active) {
        if (has_tail) dev = (x_tail - mean) * (x_tail - mean);
#pragma unroll
        for (int u = 0; u < U; ++u) {
            if (u * TPR + t >= nvec) continue;  // empty slots hold zeros, not the mean
#pragma unroll
            for (int j = 0; j < W; ++j) {
                float f[E];
                unpack_word(T{}, xv[u].w[j], f);
#pragma unroll
                for (int e = 0; e < E; ++e) dev = fmaf(f[e] - mean, f[e] - mean, dev);
            }
        }
    }
    const float var = group_sum<TPR / 32>(dev, red1) * d.inv_hidden;
    if (!active) return;
    const float rstd = rsqrtf(var + d.eps);
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int i = u * TPR + t;
        if (i >= nvec) continue;
        Words<W> g, h;
        if constexpr (PRELOAD) {
            g = wv[u];
            if constexpr (HAS_BIAS) h = bv[u];
        } else {
            g = load_words<W>(w + static_cast<long long>(i) * V);
            if constexpr (HAS_BIAS) h = load_words<W>(b + static_cast<long long>(i) * V);
        }
        Words<W> out;
#pragma unroll
        for (int j = 0; j < W; ++j) {
            float fx[E], fw[E], fb[E], fy[E];
            unpack_word(T{}, xv[u].w[j], fx);
            unpack_word(T{}, g.w[j], fw);
            if constexpr (HAS_BIAS) unpack_word(T{}, h.w[j], fb);
#pragma unroll
            for (int e = 0; e < E; ++e) {
                const float n = (fx[e] - mean) * rstd;
                if constexpr (HAS_BIAS)
                    fy[e] = fmaf(n, fw[e], fb[e]);
                else
                    fy[e] = n * fw[e];
            }
            out.w[j] = pack_word<T>(fy);
        }
        store_words<W>(yr + static_cast<long long>(i) * V, out);
    }
    if (has_tail) {
        const float n = (x_tail - mean) * rstd;
        const float wt = to_float(w[tail_start + t]);
        yr[tail_start + t] = from_float<T>(HAS_BIAS ? fmaf(n, wt, to_float(b[tail_start + t])) : n * wt);
    }
}

// The scalar path (misaligned data, 2-byte VEC, rows longer than one pass): element-wise, U per thread per sweep,
// three sweeps (mean, squared deviations, output). Same calling rules as the vector path.
template <typename T, int TPR, int U, bool HAS_BIAS>
__device__ __forceinline__ void row_scalar(T* __restrict__ yr, const T* __restrict__ xr, const T* __restrict__ w,
                                           const T* __restrict__ b, bool active, const Dims& d, int t, float* red0,
                                           float* red1) {
    constexpr int STEP = TPR * U;
    const int hidden = d.hidden;
    float sum = 0.0f;
    if (active)
        for (int base = 0; base < hidden; base += STEP)
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int i = base + u * TPR + t;
                if (i < hidden) sum += to_float(xr[i]);
            }
    const float mean = group_sum<TPR / 32>(sum, red0) * d.inv_hidden;
    float dev = 0.0f;
    if (active)
        for (int base = 0; base < hidden; base += STEP)
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int i = base + u * TPR + t;
                if (i < hidden) {
                    const float c = to_float(xr[i]) - mean;
                    dev = fmaf(c, c, dev);
                }
            }
    const float var = group_sum<TPR / 32>(dev, red1) * d.inv_hidden;
    if (!active) return;
    const float rstd = rsqrtf(var + d.eps);
    for (int base = 0; base < hidden; base += STEP)
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = base + u * TPR + t;
            if (i < hidden) {
                const float n = (to_float(xr[i]) - mean) * rstd;
                const float wt = to_float(w[i]);
                yr[i] = from_float<T>(HAS_BIAS ? fmaf(n, wt, to_float(b[i])) : n * wt);
            }
        }
}

template <typename T, int BLOCK, int VEC, int UNROLL, int ROWS_PER_BLOCK, bool HAS_BIAS>
__device__ __forceinline__ void run(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w,
                                    const T* __restrict__ b, const Dims& d) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 2, "layernorm_fwd: T is float, __half or __nv_bfloat16");
    static_assert(ROWS_PER_BLOCK >= 1, "layernorm_fwd: ROWS_PER_BLOCK >= 1");
    static_assert(BLOCK >= 32 && BLOCK <= 1024, "layernorm_fwd: BLOCK in [32, 1024]");
    static_assert(BLOCK % (32 * ROWS_PER_BLOCK) == 0, "layernorm_fwd: BLOCK % (32 * ROWS_PER_BLOCK) == 0");
    static_assert(VEC >= 1 && (VEC & (VEC - 1)) == 0, "layernorm_fwd: VEC is a power of two");
    static_assert(VEC * sizeof(T) <= 16, "layernorm_fwd: VEC * sizeof(T) <= 16");
    static_assert(UNROLL >= 1 && UNROLL <= 32, "layernorm_fwd: UNROLL in [1, 32]");

    constexpr int TPR = BLOCK / ROWS_PER_BLOCK;
    constexpr unsigned VEC_BYTES = VEC * sizeof(T);
    constexpr bool VECTOR_PATH = VEC_BYTES >= 4;
    // Per warp, two buffers: the mean's and the variance's. Between the mean's read of buffer 0 for one row and its
    // write for the next row lies the variance's __syncthreads, so two buffers suffice.
    __shared__ float red[2][BLOCK / 32];

    const bool vector_ok = VECTOR_PATH && is_aligned(x, VEC_BYTES) && is_aligned(y, VEC_BYTES) &&
                           is_aligned(w, VEC_BYTES) && (!HAS_BIAS || is_aligned(b, VEC_BYTES)) &&
                           d.x_stride % VEC == 0 && d.y_stride % VEC == 0 && d.hidden / VEC <= TPR * UNROLL;
    const int row_in_block = threadIdx.x / TPR;
    const int t = threadIdx.x % TPR;
    float* red0 = &red[0][row_in_block * (TPR / 32)];
    float* red1 = &red[1][row_in_block * (TPR / 32)];
    for (long long first = static_cast<long long>(blockIdx.x) * ROWS_PER_BLOCK; first < d.rows;
         first += static_cast<long long>(gridDim.x) * ROWS_PER_BLOCK) {
        const long long row = first + row_in_block;
        const bool active = row < d.rows;
        T* yr = y + (active ? row * d.y_stride : 0);
        const T* xr = x + (active ? row * d.x_stride : 0);
        // The path is uniform over the grid, so every barrier is reached by all threads.
        if constexpr (VECTOR_PATH) {
            if (vector_ok)
                row_vector<T, TPR, VEC, UNROLL, HAS_BIAS>(yr, xr, w, b, active, d, t, red0, red1);
            else
                row_scalar<T, TPR, UNROLL, HAS_BIAS>(yr, xr, w, b, active, d, t, red0, red1);
        } else {
            row_scalar<T, TPR, UNROLL, HAS_BIAS>(yr, xr, w, b, active, d, t, red0, red1);
        }
    }
}

}  // namespace ktune::dev::layernorm

template <typename T, int BLOCK, int VEC, int UNROLL, int ROWS_PER_BLOCK>
__global__ void __launch_bounds__(BLOCK)
    layernorm_fwd(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                  int rows, int hidden, long long x_row_stride, long long y_row_stride, float eps) {
    const ktune::dev::layernorm::Dims d{rows, hidden, x_row_stride, y_row_stride, 1.0f / static_cast<float>(hidden),
                                        eps};
    ktune::dev::layernorm::run<T, BLOCK, VEC, UNROLL, ROWS_PER_BLOCK, true>(y, x, w, b, d);
}

template <typename T, int BLOCK, int VEC, int UNROLL, int ROWS_PER_BLOCK>
__global__ void __launch_bounds__(BLOCK)
    layernorm_fwd_nobias(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w, int rows, int hidden,
                         long long x_row_stride, long long y_row_stride, float eps) {
    const ktune::dev::layernorm::Dims d{rows, hidden, x_row_stride, y_row_stride, 1.0f / static_cast<float>(hidden),
                                        eps};
    ktune::dev::layernorm::run<T, BLOCK, VEC, UNROLL, ROWS_PER_BLOCK, false>(y, x, w, nullptr, d);
}
