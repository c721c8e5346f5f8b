#pragma once
// LayerNorm forward, the tuned kernels. For r < rows, c < hidden:
//
//   mean[r] = mean_c(x[r, :]),  var[r] = mean_c((x[r, :] - mean[r])^2),  rstd[r] = rsqrt(var[r] + eps)
//   y[r, c] = (x[r, c] - mean[r]) * rstd[r] * w[c] + b[c]                 (no "+ b[c]" in layernorm_fwd_nobias)
//
// Two reductions over the register-held row: the mean, then the squared deviations from it (not E[x^2] - E[x]^2,
// which cancels catastrophically when |mean| >> std); with CLUSTER > 1, per block, then one exchange (below). fp32
// throughout; y rounded once to T. x and y rows start their row stride apart (elements, >= hidden); padding columns
// are never read or written. T: float, __half, __nv_bfloat16.
//   layernorm_fwd         search_spaces/layernorm.yaml (op layernorm, variant fwd)
//   layernorm_fwd_nobias  search_spaces/layernorm_nobias.yaml (variant fwd_nobias)
// Reference: kernels/layernorm/layernorm_reference.cuh.
//
// Tunables (template parameters, named as the YAML keys):
//   BLOCK           threads per block: a multiple of 32 * ROWS_PER_BLOCK, at most 1024.
//   VEC             elements per vector access: a power of two with VEC * sizeof(T) <= 16; the vector path needs
//                   accesses of at least 4 bytes (VEC 1 for 16-bit types always takes the scalar path).
//   UNROLL          vector accesses each thread holds per row, 1..32. The vector path keeps the row in registers
//                   (CLUSTER * threads_per_row * VEC * UNROLL >= hidden); otherwise the scalar path runs (three
//                   sweeps: mean, deviations, output; correct, slow): the YAML keeps such configurations out.
//   ROWS_PER_BLOCK  rows a block works on at once: threads_per_row = BLOCK / ROWS_PER_BLOCK, a multiple of 32.
//   CLUSTER         blocks per row (thread-block cluster size, __cluster_dims__): 1, 2, 4, 8 or 16 (16 is beyond the
//                   portable size; the launcher allows it per kernel), with ROWS_PER_BLOCK 1. Each block of a cluster
//                   takes the same row and a CLUSTER-th of its columns (chunk j of threads_per_row accesses belongs to
//                   rank j % CLUSTER, as in add_rmsnorm_fwd.cuh); the vector path then needs CLUSTER * threads_per_row
//                   * VEC * UNROLL >= hidden. For decode sizes: M rows on M blocks leave most SMs idle, and a row of
//                   fp32 H = 8192 on one SM took 3.0-3.5 us; over 4 blocks 2.7-3.0 us (H100, 2026-11-26).
//                   Below H = 8192 one block per row stays ahead.
//
// With CLUSTER > 1 the two reductions stay one exchange: each block reduces its columns to their sum and the sum of
// squared deviations from its own mean, pushes the pair to every block of the cluster
// (kernels/common/ktune_cluster.cuh), and every block combines the CLUSTER pairs in rank order (Chan et al.'s
// parallel variance: M2 = sum of the blocks' M2 + n_b (mean_b - mean)^2), so every block gets the same bits. The
// combination's n_b (mean_b - mean) = sum_b - n_b mean cancels to first order in |mean| / std, so every element is
// taken relative to a pivot the cluster shares, the row's first element: the sums then scale with the row's spread,
// not its mean. An fp32 host simulation of
// this order of operations (H = 8192, 4 blocks): relative error
// of the variance 1.4e-5 at |mean| = 1e3 std and 2.4e-4 at 1e4 without the pivot, 5e-7 to 8e-7 with it at any ratio.
//
// Launch: block = BLOCK threads (1-D), grid.x a multiple of CLUSTER (clusters loop over row groups);
// ceil_div(M, ROWS_PER_BLOCK) * CLUSTER gives one group per cluster. Static shared memory only. The vector path needs
// x, y, w, b aligned to VEC * sizeof(T) bytes and both row strides multiples of VEC (checked once per launch);
// otherwise every row takes the scalar path.
#include "kernels/common/ktune_cluster.cuh"

namespace ktune::dev::layernorm {

struct Dims {
    int rows, hidden;
    long long x_stride, y_stride;
    float inv_hidden, eps;
};

// Elements of a row that cluster rank q holds: `units` accesses of `width` elements, chunk j of TPR accesses held by
// rank j % CLUSTER, and `tail` more elements held by the rank of the chunk after the last whole access.
template <int TPR, int CLUSTER>
__device__ __forceinline__ int owned_elements(int q, int units, int width, int tail) {
    const int full = units / TPR, part = units % TPR;
    const bool last = full % CLUSTER == q;
    return ((full > q ? (full - q - 1) / CLUSTER + 1 : 0) * TPR + (last ? part : 0)) * width + (last ? tail : 0);
}

// A row's mean and variance, relative to the row's pivot (the caller adds it back to the mean), from every thread's
// partial sum of (x - pivot): `deviations(from)` is called once with the value (relative to the pivot) deviations are
// to be taken from, and must return the thread's sum of squared deviations of (x - pivot) from it.
//   CLUSTER 1: the row's mean (sum * inv_hidden), then the squared deviations from it.
//   CLUSTER > 1: this block's own mean, the squared deviations from it (M2_b), one exchange of (sum_b, M2_b), and the
//   blocks combined in rank order. `owned(q)`: the elements rank q holds. `round`: the row's index among this
//   cluster's rows. Every thread of every block of the cluster calls it once per row.
template <int TPR, int CLUSTER>
struct RowMoments {
    float* red0;
    float* red1;
    ClusterExchange<CLUSTER>* ex;
    int round, rank;

    template <typename Deviations, typename Owned>
    __device__ __forceinline__ float2 operator()(float sum, const Deviations& deviations, const Owned& owned,
                                                 const Dims& d) const {
        const float block_sum = group_sum<TPR / 32>(sum, red0);
        if constexpr (CLUSTER == 1) {
            const float mean = block_sum * d.inv_hidden;
            return make_float2(mean, group_sum<TPR / 32>(deviations(mean), red1) * d.inv_hidden);
        } else {
            const int n = owned(rank);
            const float m2 = group_sum<TPR / 32>(deviations(n > 0 ? block_sum / static_cast<float>(n) : 0.0f), red1);
            cluster_exchange<CLUSTER>(*ex, round,
                                      static_cast<unsigned long long>(__float_as_uint(m2)) << 32 |
                                          __float_as_uint(block_sum),
                                      rank);
            float total = 0.0f;
#pragma unroll
            for (int q = 0; q < CLUSTER; ++q)
                total += __uint_as_float(static_cast<unsigned>(ex->values[round & 1][q]));
            const float mean = total * d.inv_hidden;
            float m2_all = 0.0f;
#pragma unroll
            for (int q = 0; q < CLUSTER; ++q) {
                const unsigned long long v = ex->values[round & 1][q];
                const int nq = owned(q);
                const float delta = __uint_as_float(static_cast<unsigned>(v)) - static_cast<float>(nq) * mean;
                if (nq > 0) m2_all += __uint_as_float(static_cast<unsigned>(v >> 32)) + delta * delta / nq;
            }
            return make_float2(mean, m2_all * d.inv_hidden);
        }
    }
};

// The vector path: the row in registers as loaded words; sum -> mean, squared deviations -> rstd, then y. Two group
// reductions, through the two halves of a double buffer (see group_sum). Every thread of the block calls it once per
// row group.
template <typename T, int TPR, int V, int U, int CLUSTER, bool HAS_BIAS>
__device__ __forceinline__ void row_vector(T* __restrict__ yr, const T* __restrict__ xr, const T* __restrict__ w,
                                           const T* __restrict__ b, bool active, const Dims& d, int t,
                                           const RowMoments<TPR, CLUSTER>& moments) {
    constexpr int W = V * int(sizeof(T)) / 4;
    constexpr int E = elems_per_word<T>;
    static_assert(W >= 1 && W * 4 == V * int(sizeof(T)), "layernorm vector path: accesses of 4, 8 or 16 bytes");
    // w (and b) go out ahead of the reductions while they cost at most 16 registers.
    constexpr bool PRELOAD = W * U * (HAS_BIAS ? 2 : 1) <= 16;
    const int nvec = d.hidden / V;
    const int tail_start = nvec * V;
    // The tail's columns lie in chunk nvec / TPR: its owner takes them.
    const int rank = moments.rank;
    const bool has_tail = t < d.hidden - tail_start && (nvec / TPR) % CLUSTER == rank;

    Words<W> xv[U];
    Words<W> wv[PRELOAD ? U : 1], bv[PRELOAD && HAS_BIAS ? U : 1];
    float x_tail = 0.0f, sum = 0.0f;
    float pivot = 0.0f;  // CLUSTER > 1: the row's first element, read by every block of the cluster (see the header)
    if (active) {
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = (u * CLUSTER + rank) * TPR + t;
            xv[u] = i < nvec ? load_words<W>(xr + static_cast<long long>(i) * V) : zero_words<W>();
        }
        if constexpr (PRELOAD) {
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int i = (u * CLUSTER + rank) * TPR + t;
                wv[u] = i < nvec ? load_words<W>(w + static_cast<long long>(i) * V) : zero_words<W>();
                if constexpr (HAS_BIAS)
                    bv[u] = i < nvec ? load_words<W>(b + static_cast<long long>(i) * V) : zero_words<W>();
            }
        }
        if constexpr (CLUSTER > 1) pivot = to_float(xr[0]);  // after the row's loads: it does not delay them
        if (has_tail) x_tail = to_float(xr[tail_start + t]);
        sum = CLUSTER == 1 ? x_tail : (has_tail ? x_tail - pivot : 0.0f);
#pragma unroll
        for (int u = 0; u < U; ++u) {
            // Empty slots hold zeros, not elements (CLUSTER 1 adds them: zero, and the same code as before clusters).
            if (CLUSTER > 1 && (u * CLUSTER + rank) * TPR + t >= nvec) continue;
#pragma unroll
            for (int j = 0; j < W; ++j) {
                float f[E];
                unpack_word(T{}, xv[u].w[j], f);
#pragma unroll
                for (int e = 0; e < E; ++e) sum += f[e] - pivot;
            }
        }
    }
    const auto deviations = [&](float from) {
        float dev = 0.0f;
        if (active) {
            if (has_tail) dev = (x_tail - pivot - from) * (x_tail - pivot - from);
#pragma unroll
            for (int u = 0; u < U; ++u) {
                if ((u * CLUSTER + rank) * TPR + t >= nvec) continue;  // empty slots hold zeros, not the mean
#pragma unroll
                for (int j = 0; j < W; ++j) {
                    float f[E];
                    unpack_word(T{}, xv[u].w[j], f);
#pragma unroll
                    for (int e = 0; e < E; ++e) dev = fmaf(f[e] - pivot - from, f[e] - pivot - from, dev);
                }
            }
        }
        return dev;
    };
    const auto owned = [&](int q) {
        return owned_elements<TPR, CLUSTER>(q, nvec, V, d.hidden - tail_start);
    };
    const float2 mv = moments(sum, deviations, owned, d);
    const float mean = pivot + mv.x, var = mv.y;
    if (!active) return;
    const float rstd = rsqrtf(var + d.eps);
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int i = (u * CLUSTER + rank) * TPR + t;
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
template <typename T, int TPR, int U, int CLUSTER, bool HAS_BIAS>
__device__ __forceinline__ void row_scalar(T* __restrict__ yr, const T* __restrict__ xr, const T* __restrict__ w,
                                           const T* __restrict__ b, bool active, const Dims& d, int t,
                                           const RowMoments<TPR, CLUSTER>& moments) {
    constexpr int STEP = CLUSTER * TPR * U;  // columns per sweep of the cluster
    const int hidden = d.hidden;
    const int first = moments.rank * TPR + t;  // the thread's first column; chunk j of TPR columns: rank j % CLUSTER
    const float pivot = CLUSTER > 1 && active ? to_float(xr[0]) : 0.0f;  // as in row_vector
    float sum = 0.0f;
    if (active)
        for (int base = 0; base < hidden; base += STEP)
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int i = base + u * CLUSTER * TPR + first;
                if (i < hidden) sum += to_float(xr[i]) - pivot;
            }
    const auto deviations = [&](float from) {
        float dev = 0.0f;
        if (active)
            for (int base = 0; base < hidden; base += STEP)
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    const int i = base + u * CLUSTER * TPR + first;
                    if (i < hidden) {
                        const float c = to_float(xr[i]) - pivot - from;
                        dev = fmaf(c, c, dev);
                    }
                }
        return dev;
    };
    const auto owned = [&](int q) { return owned_elements<TPR, CLUSTER>(q, hidden, 1, 0); };
    const float2 mv = moments(sum, deviations, owned, d);
    const float mean = pivot + mv.x, var = mv.y;
    if (!active) return;
    const float rstd = rsqrtf(var + d.eps);
    for (int base = 0; base < hidden; base += STEP)
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = base + u * CLUSTER * TPR + first;
            if (i < hidden) {
                const float n = (to_float(xr[i]) - mean) * rstd;
                const float wt = to_float(w[i]);
                yr[i] = from_float<T>(HAS_BIAS ? fmaf(n, wt, to_float(b[i])) : n * wt);
            }
        }
}

template <typename T, int BLOCK, int VEC, int UNROLL, int ROWS_PER_BLOCK, int CLUSTER, bool HAS_BIAS>
__device__ __forceinline__ void run(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w,
                                    const T* __restrict__ b, const Dims& d) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 2, "layernorm_fwd: T is float, __half or __nv_bfloat16");
    static_assert(ROWS_PER_BLOCK >= 1, "layernorm_fwd: ROWS_PER_BLOCK >= 1");
    static_assert(BLOCK >= 32 && BLOCK <= 1024, "layernorm_fwd: BLOCK in [32, 1024]");
    static_assert(BLOCK % (32 * ROWS_PER_BLOCK) == 0, "layernorm_fwd: BLOCK % (32 * ROWS_PER_BLOCK) == 0");
    static_assert(VEC >= 1 && (VEC & (VEC - 1)) == 0, "layernorm_fwd: VEC is a power of two");
    static_assert(VEC * sizeof(T) <= 16, "layernorm_fwd: VEC * sizeof(T) <= 16");
    static_assert(UNROLL >= 1 && UNROLL <= 32, "layernorm_fwd: UNROLL in [1, 32]");
    static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4 || CLUSTER == 8 || CLUSTER == 16,
                  "layernorm_fwd: CLUSTER in {1, 2, 4, 8, 16}");
    static_assert(CLUSTER == 1 || ROWS_PER_BLOCK == 1, "layernorm_fwd: a cluster's blocks take one row at a time");

    constexpr int TPR = BLOCK / ROWS_PER_BLOCK;
    constexpr unsigned VEC_BYTES = VEC * sizeof(T);
    constexpr bool VECTOR_PATH = VEC_BYTES >= 4;
    // Per warp, two buffers: the mean's and the variance's. Between the mean's read of buffer 0 for one row and its
    // write for the next row lies the variance's __syncthreads, so two buffers suffice.
    __shared__ float red[2][BLOCK / 32];
    __shared__ ClusterExchange<CLUSTER> ex;  // the blocks' (sum, M2) pairs (CLUSTER > 1)

    const long long cluster = blockIdx.x / CLUSTER, clusters = gridDim.x / CLUSTER;
    if (cluster * ROWS_PER_BLOCK < d.rows) cluster_exchange_init<CLUSTER>(ex);  // uniform over the cluster
    const bool vector_ok = VECTOR_PATH && is_aligned(x, VEC_BYTES) && is_aligned(y, VEC_BYTES) &&
                           is_aligned(w, VEC_BYTES) && (!HAS_BIAS || is_aligned(b, VEC_BYTES)) &&
                           d.x_stride % VEC == 0 && d.y_stride % VEC == 0 &&
                           d.hidden / VEC <= CLUSTER * TPR * UNROLL;
    const int row_in_block = threadIdx.x / TPR;
    const int t = threadIdx.x % TPR;
    const int rank = cluster_rank<CLUSTER>();
    float* red0 = &red[0][row_in_block * (TPR / 32)];
    float* red1 = &red[1][row_in_block * (TPR / 32)];
    int round = 0;
    for (long long first = cluster * ROWS_PER_BLOCK; first < d.rows; first += clusters * ROWS_PER_BLOCK) {
        const long long row = first + row_in_block;
        const bool active = row < d.rows;
        T* yr = y + (active ? row * d.y_stride : 0);
        const T* xr = x + (active ? row * d.x_stride : 0);
        const RowMoments<TPR, CLUSTER> moments{red0, red1, &ex, round++, rank};
        // The path is uniform over the grid, so every barrier is reached by all threads (of the cluster).
        if constexpr (VECTOR_PATH) {
            if (vector_ok)
                row_vector<T, TPR, VEC, UNROLL, CLUSTER, HAS_BIAS>(yr, xr, w, b, active, d, t, moments);
            else
                row_scalar<T, TPR, UNROLL, CLUSTER, HAS_BIAS>(yr, xr, w, b, active, d, t, moments);
        } else {
            row_scalar<T, TPR, UNROLL, CLUSTER, HAS_BIAS>(yr, xr, w, b, active, d, t, moments);
        }
    }
}

}  // namespace ktune::dev::layernorm

template <typename T, int BLOCK, int VEC, int UNROLL, int ROWS_PER_BLOCK, int CLUSTER>
__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(BLOCK)
    layernorm_fwd(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                  int rows, int hidden, long long x_row_stride, long long y_row_stride, float eps) {
    const ktune::dev::layernorm::Dims d{rows, hidden, x_row_stride, y_row_stride, 1.0f / static_cast<float>(hidden),
                                        eps};
    ktune::dev::layernorm::run<T, BLOCK, VEC, UNROLL, ROWS_PER_BLOCK, CLUSTER, true>(y, x, w, b, d);
}

template <typename T, int BLOCK, int VEC, int UNROLL, int ROWS_PER_BLOCK, int CLUSTER>
__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(BLOCK)
    layernorm_fwd_nobias(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w, int rows, int hidden,
                         long long x_row_stride, long long y_row_stride, float eps) {
    const ktune::dev::layernorm::Dims d{rows, hidden, x_row_stride, y_row_stride, 1.0f / static_cast<float>(hidden),
                                        eps};
    ktune::dev::layernorm::run<T, BLOCK, VEC, UNROLL, ROWS_PER_BLOCK, CLUSTER, false>(y, x, w, nullptr, d);
}
