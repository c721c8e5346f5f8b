#pragma once
// Fused residual add + RMSNorm forward, the tuned kernels. For r < rows, c < hidden:
//
//   s[r, c]            = x[r, c] + residual[r, c]                         (fp32, from the T inputs)
//   residual_out[r, c] = s[r, c] rounded to T                              (the updated residual stream)
//   y[r, c]            = s[r, c] * rsqrt(mean_c(s[r, :]^2) + eps) * g[c]  rounded to T, g = w, or 1 + w when OFFSET
//
// The fp32 sum is normalised, not its rounding to T (vLLM's fused_add_rms_norm normalises the rounded residual; this
// op keeps the bits it already has). OFFSET 1 is the Gemma weight convention (the checkpoint stores w - 1).
// Two entry points share the row code:
//   add_rmsnorm_fwd          writes residual_out (its own buffer)            search_spaces/add_rmsnorm.yaml (fwd),
//                                                                            add_rmsnorm_gemma.yaml (fwd_gemma)
//   add_rmsnorm_fwd_inplace  updates residual in place                       search_spaces/add_rmsnorm_inplace.yaml
// Reference: kernels/add_rmsnorm/add_rmsnorm_reference.cuh. T: float, __half, __nv_bfloat16.
// Row strides (elements, >= hidden): x_row_stride for x, residual_row_stride for residual and residual_out,
// y_row_stride for y. Padding columns are never read or written.
//
// Tunables (template parameters, named as the YAML keys):
//   BLOCK           threads per block: a multiple of 32 * ROWS_PER_BLOCK, at most 1024.
//   VEC             elements per vector access: a power of two with VEC * sizeof(T) <= 16; the vector path needs
//                   accesses of at least 4 bytes (VEC 1 for 16-bit types always takes the scalar path).
//   UNROLL          vector accesses each thread holds per row, 1..32. The vector path holds the whole fp32 sum row in
//                   registers (CLUSTER * threads_per_row * VEC * UNROLL >= hidden); otherwise the scalar path runs
//                   (two sweeps, correct, slow): the YAML keeps such configurations out.
//   ROWS_PER_BLOCK  rows a block works on at once: threads_per_row = BLOCK / ROWS_PER_BLOCK, a multiple of 32.
//   CLUSTER         blocks per row (thread-block cluster size, __cluster_dims__): 1, 2, 4 or 8. Each block of a cluster
//                   takes the same rows and a CLUSTER-th of their columns (chunk j of threads_per_row * VEC columns
//                   belongs to rank j % CLUSTER); the row's sum of squares goes through distributed shared memory
//                   (kernels/common/ktune_cluster.cuh). For small M: M rows on M blocks leave most SMs idle, and the
//                   few that work are limited by what one SM can pull (fp32 M = 16, H = 8192: 2 MB on 16 SMs).
//   OFFSET          0: g = w; 1: g = 1 + w (Gemma). A literal in the YAML's kernel name, not searched.
//
// Launch: block = BLOCK threads (1-D), grid.x a multiple of CLUSTER (clusters loop over row groups);
// ceil_div(M, ROWS_PER_BLOCK) * CLUSTER gives one group per cluster. Static shared memory only. The vector path needs
// every pointer aligned to VEC * sizeof(T) bytes and every row stride a multiple of VEC (checked once per launch);
// otherwise every row takes the scalar path.
#include "kernels/common/ktune_cluster.cuh"

namespace ktune::dev::add_rmsnorm {

template <int OFFSET>
__device__ __forceinline__ float gain(float w) {
    if constexpr (OFFSET != 0)
        return 1.0f + w;
    else
        return w;
}

// One row's pointers. residual_in and residual_out alias in the in-place kernel: no __restrict__ on them.
template <typename T>
struct Row {
    T* __restrict__ y;
    T* res_out;
    const T* __restrict__ x;
    const T* res_in;
    bool active;  // false for the rows past `rows` in the last group: barriers only
};

struct Dims {
    int rows, hidden;
    long long x_stride, res_stride, y_stride;
    float inv_hidden, eps;
};

// The row's sum of squares: over the group's warps, then (CLUSTER > 1: one row per block) over the cluster's blocks,
// each block's sum pushed to every block (kernels/common/ktune_cluster.cuh) and added in rank order, so every block
// gets the same bits. `round`: the row's index among this cluster's rows.
template <int TPR, int CLUSTER>
struct RowSum {
    float* red;  // the group's warps' slots (group_sum)
    ClusterExchange<CLUSTER>* ex;
    int round, rank;

    __device__ __forceinline__ float operator()(float v) const {
        v = group_sum<TPR / 32>(v, red);
        if constexpr (CLUSTER > 1) {
            cluster_exchange<CLUSTER>(*ex, round, __float_as_uint(v), rank);
            v = 0.0f;
#pragma unroll
            for (int q = 0; q < CLUSTER; ++q) v += __uint_as_float(static_cast<unsigned>(ex->values[round & 1][q]));
        }
        return v;
    }
};

// The vector path: the row's fp32 sums in registers (U accesses of V elements per thread), residual_out stored as
// soon as it is known, one group reduction, then y. Every thread of the block calls it once per row group.
template <typename T, int TPR, int V, int U, int CLUSTER, int OFFSET>
__device__ __forceinline__ void row_vector(const Row<T>& r, const T* __restrict__ w, const Dims& d, int t, int rank,
                                           const RowSum<TPR, CLUSTER>& row_sum) {
    constexpr int W = V * int(sizeof(T)) / 4;
    constexpr int E = elems_per_word<T>;
    static_assert(W >= 1 && W * 4 == V * int(sizeof(T)), "add_rmsnorm vector path: accesses of 4, 8 or 16 bytes");
    // w's loads go out ahead of the reduction while that costs at most 16 registers.
    constexpr bool PRELOAD_W = W * U <= 16;
    const int nvec = d.hidden / V;
    const int tail_start = nvec * V;
    // The tail's columns lie in chunk nvec / TPR: its owner takes them.
    const bool has_tail = t < d.hidden - tail_start && (nvec / TPR) % CLUSTER == rank;

    float s[U][V];
    Words<W> wv[PRELOAD_W ? U : 1];
    float s_tail = 0.0f, sum_sq = 0.0f;
    if (r.active) {
        Words<W> xv[U], rv[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = (u * CLUSTER + rank) * TPR + t;
            xv[u] = i < nvec ? load_words<W>(r.x + static_cast<long long>(i) * V) : zero_words<W>();
            rv[u] = i < nvec ? load_words<W>(r.res_in + static_cast<long long>(i) * V) : zero_words<W>();
        }
        if constexpr (PRELOAD_W) {
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int i = (u * CLUSTER + rank) * TPR + t;
                wv[u] = i < nvec ? load_words<W>(w + static_cast<long long>(i) * V) : zero_words<W>();
            }
        }
        if (has_tail) s_tail = to_float(r.x[tail_start + t]) + to_float(r.res_in[tail_start + t]);
        sum_sq = s_tail * s_tail;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = (u * CLUSTER + rank) * TPR + t;
            Words<W> out;
#pragma unroll
            for (int j = 0; j < W; ++j) {
                float fx[E], fr[E];
                unpack_word(T{}, xv[u].w[j], fx);
                unpack_word(T{}, rv[u].w[j], fr);
#pragma unroll
                for (int e = 0; e < E; ++e) {
                    s[u][j * E + e] = fx[e] + fr[e];
                    sum_sq = fmaf(s[u][j * E + e], s[u][j * E + e], sum_sq);
                }
                out.w[j] = pack_word<T>(&s[u][j * E]);
            }
            if (i < nvec) store_words<W>(r.res_out + static_cast<long long>(i) * V, out);
        }
        if (has_tail) r.res_out[tail_start + t] = from_float<T>(s_tail);
    }
    sum_sq = row_sum(sum_sq);
    if (!r.active) return;
    const float rstd = rsqrtf(sum_sq * d.inv_hidden + d.eps);
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int i = (u * CLUSTER + rank) * TPR + t;
        if (i >= nvec) continue;
        Words<W> g;
        if constexpr (PRELOAD_W)
            g = wv[u];
        else
            g = load_words<W>(w + static_cast<long long>(i) * V);
        Words<W> out;
#pragma unroll
        for (int j = 0; j < W; ++j) {
            float fw[E], fy[E];
            unpack_word(T{}, g.w[j], fw);
#pragma unroll
            for (int e = 0; e < E; ++e) fy[e] = s[u][j * E + e] * rstd * gain<OFFSET>(fw[e]);
            out.w[j] = pack_word<T>(fy);
        }
        store_words<W>(r.y + static_cast<long long>(i) * V, out);
    }
    if (has_tail) r.y[tail_start + t] = from_float<T>(s_tail * rstd * gain<OFFSET>(to_float(w[tail_start + t])));
}

// The scalar path (misaligned data, 2-byte VEC, rows longer than one pass): element-wise, U per thread per sweep. The
// first sweep only sums squares; the second re-reads x and residual (before overwriting residual, element by element,
// in the same thread) and writes residual_out and y. Same calling rules as the vector path.
template <typename T, int TPR, int U, int CLUSTER, int OFFSET>
__device__ __forceinline__ void row_scalar(const Row<T>& r, const T* __restrict__ w, const Dims& d, int t, int rank,
                                           const RowSum<TPR, CLUSTER>& row_sum) {
    constexpr int STEP = CLUSTER * TPR * U;  // columns per sweep of the cluster
    const int hidden = d.hidden;
    float sum_sq = 0.0f;
    if (r.active) {
        for (int base = 0; base < hidden; base += STEP) {
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int i = base + (u * CLUSTER + rank) * TPR + t;
                if (i < hidden) {
                    const float s = to_float(r.x[i]) + to_float(r.res_in[i]);
                    sum_sq = fmaf(s, s, sum_sq);
                }
            }
        }
    }
    sum_sq = row_sum(sum_sq);
    if (!r.active) return;
    const float rstd = rsqrtf(sum_sq * d.inv_hidden + d.eps);
    for (int base = 0; base < hidden; base += STEP) {
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = base + (u * CLUSTER + rank) * TPR + t;
            if (i < hidden) {
                const float s = to_float(r.x[i]) + to_float(r.res_in[i]);
                r.res_out[i] = from_float<T>(s);
                r.y[i] = from_float<T>(s * rstd * gain<OFFSET>(to_float(w[i])));
            }
        }
    }
}

template <typename T, int BLOCK, int VEC, int UNROLL, int ROWS_PER_BLOCK, int CLUSTER, int OFFSET>
__device__ __forceinline__ void run(T* __restrict__ y, T* res_out, const T* __restrict__ x, const T* res_in,
                                    const T* __restrict__ w, const Dims& d) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 2, "add_rmsnorm_fwd: T is float, __half or __nv_bfloat16");
    static_assert(ROWS_PER_BLOCK >= 1, "add_rmsnorm_fwd: ROWS_PER_BLOCK >= 1");
    static_assert(BLOCK >= 32 && BLOCK <= 1024, "add_rmsnorm_fwd: BLOCK in [32, 1024]");
    static_assert(BLOCK % (32 * ROWS_PER_BLOCK) == 0, "add_rmsnorm_fwd: BLOCK % (32 * ROWS_PER_BLOCK) == 0");
    static_assert(VEC >= 1 && (VEC & (VEC - 1)) == 0, "add_rmsnorm_fwd: VEC is a power of two");
    static_assert(VEC * sizeof(T) <= 16, "add_rmsnorm_fwd: VEC * sizeof(T) <= 16");
    static_assert(UNROLL >= 1 && UNROLL <= 32, "add_rmsnorm_fwd: UNROLL in [1, 32]");
    static_assert(OFFSET == 0 || OFFSET == 1, "add_rmsnorm_fwd: OFFSET is 0 or 1");
    static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4 || CLUSTER == 8,
                  "add_rmsnorm_fwd: CLUSTER in {1, 2, 4, 8}");

    constexpr int TPR = BLOCK / ROWS_PER_BLOCK;
    constexpr unsigned VEC_BYTES = VEC * sizeof(T);
    constexpr bool VECTOR_PATH = VEC_BYTES >= 4;
    static_assert(CLUSTER == 1 || ROWS_PER_BLOCK == 1, "add_rmsnorm_fwd: a cluster's blocks take one row at a time");
    __shared__ float red[2][BLOCK / 32];  // per warp, double-buffered: one barrier per row group
    __shared__ ClusterExchange<CLUSTER> ex;

    const bool vector_ok = VECTOR_PATH && is_aligned(x, VEC_BYTES) && is_aligned(res_in, VEC_BYTES) &&
                           is_aligned(res_out, VEC_BYTES) && is_aligned(y, VEC_BYTES) && is_aligned(w, VEC_BYTES) &&
                           d.x_stride % VEC == 0 && d.res_stride % VEC == 0 && d.y_stride % VEC == 0 &&
                           d.hidden / VEC <= CLUSTER * TPR * UNROLL;
    const int row_in_block = threadIdx.x / TPR;
    const int t = threadIdx.x % TPR;
    const int rank = cluster_rank<CLUSTER>();
    const long long cluster = blockIdx.x / CLUSTER, clusters = gridDim.x / CLUSTER;
    if (cluster * ROWS_PER_BLOCK < d.rows) cluster_exchange_init<CLUSTER>(ex);  // uniform over the cluster
    int parity = 0, round = 0;
    for (long long first = cluster * ROWS_PER_BLOCK; first < d.rows; first += clusters * ROWS_PER_BLOCK) {
        const long long row = first + row_in_block;
        const bool active = row < d.rows;
        const Row<T> r{y + (active ? row * d.y_stride : 0), res_out + (active ? row * d.res_stride : 0),
                       x + (active ? row * d.x_stride : 0), res_in + (active ? row * d.res_stride : 0), active};
        const RowSum<TPR, CLUSTER> scratch{&red[parity][row_in_block * (TPR / 32)], &ex, round, rank};
        // The path is uniform over the grid, so every barrier is reached by all threads (of the cluster).
        if constexpr (VECTOR_PATH) {
            if (vector_ok)
                row_vector<T, TPR, VEC, UNROLL, CLUSTER, OFFSET>(r, w, d, t, rank, scratch);
            else
                row_scalar<T, TPR, UNROLL, CLUSTER, OFFSET>(r, w, d, t, rank, scratch);
        } else {
            row_scalar<T, TPR, UNROLL, CLUSTER, OFFSET>(r, w, d, t, rank, scratch);
        }
        parity ^= 1;
        ++round;
    }
}

}  // namespace ktune::dev::add_rmsnorm

template <typename T, int BLOCK, int VEC, int UNROLL, int ROWS_PER_BLOCK, int CLUSTER, int OFFSET>
__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(BLOCK)
    add_rmsnorm_fwd(T* __restrict__ y, T* __restrict__ residual_out, const T* __restrict__ x,
                    const T* __restrict__ residual, const T* __restrict__ w, int rows, int hidden,
                    long long x_row_stride, long long residual_row_stride, long long y_row_stride, float eps) {
    const ktune::dev::add_rmsnorm::Dims d{rows, hidden, x_row_stride, residual_row_stride, y_row_stride,
                                          1.0f / static_cast<float>(hidden), eps};
    ktune::dev::add_rmsnorm::run<T, BLOCK, VEC, UNROLL, ROWS_PER_BLOCK, CLUSTER, OFFSET>(y, residual_out, x, residual,
                                                                                         w, d);
}

template <typename T, int BLOCK, int VEC, int UNROLL, int ROWS_PER_BLOCK, int CLUSTER, int OFFSET>
__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(BLOCK)
    add_rmsnorm_fwd_inplace(T* __restrict__ y, T* residual, const T* __restrict__ x, const T* __restrict__ w,
                            int rows, int hidden, long long x_row_stride, long long residual_row_stride,
                            long long y_row_stride, float eps) {
    const ktune::dev::add_rmsnorm::Dims d{rows, hidden, x_row_stride, residual_row_stride, y_row_stride,
                                          1.0f / static_cast<float>(hidden), eps};
    ktune::dev::add_rmsnorm::run<T, BLOCK, VEC, UNROLL, ROWS_PER_BLOCK, CLUSTER, OFFSET>(y, residual, x, residual, w,
                                                                                         d);
}
