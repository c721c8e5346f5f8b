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
//
// Loads first (one_group): at decode sizes (M = 1..16) the kernel is one chain of latencies (kernel start, the
// instruction fetch of the code before the first load, cold after an L2 flush, one DRAM round trip, the (cluster)
// reduction, the stores). The kernel used to check the launch, set up the cluster's exchange and pick the path first:
// its first vector load was the ~125th instruction executed (~160-180th with a cluster). Now, for the vector path's
// configurations with at most 8 held words per array (all the decode sizes' best ones), its first code computes each
// thread's addresses in its cluster's row group and issues the loads of x, the residual and (PRELOAD_W) w (~the 47th-
// 62nd instruction, after the 1 / hidden division); a thread loads only whole accesses inside its own row, and only
// when x, residual, w and both row strides are aligned to the access, so nothing can fault whatever the launch. The
// exchange's set-up and the launch checks run while the loads fly. With the YAML's grid (one row group per cluster)
// and the vector path, the same terms in the same order normalise the held words (same bits); otherwise the early
// loads are dropped and the general paths below run as before. In place, a thread loads early only residual words
// that it alone later overwrites, with a plain ld.global (not .nc: the launch writes the residual). On the H100, same
// call, against the kernel before: best kernel time -6 to -15 % at M = 1 and 16 in all three variants (bf16 M=1
// H=4096 2.21 -> 1.89 us), M >= 256 within 1 % (2026-11-26).
#include "kernels/common/ktune_cluster.cuh"
#include "kernels/common/dependent_launch.cuh"

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

// The loads-first path's row (one_group): row_vector's code on words loaded before the launch checks. h.x[u], h.r[u]
// (and h.w[u] when PRELOAD_W) hold access i = (u * CLUSTER + rank) * TPR + t of x, residual (and w) where the row is
// active and i < nvec; other words are undefined and taken as zeros, as row_vector's are. Same terms in the same order
// as row_vector (same bits); the tail elements (hidden % V) are loaded here. A copy, not shared with row_vector: the
// general path built on it (held words through its loop) cost up to +45 registers a thread.
template <typename T, int V, int U>
struct Held {
    static constexpr int W = V * int(sizeof(T)) / 4;
    static constexpr bool PRELOAD_W = W * U <= 16;  // as row_vector
    static_assert(W >= 1 && W * 4 == V * int(sizeof(T)), "add_rmsnorm vector path: accesses of 4, 8 or 16 bytes");
    Words<W> x[U], r[U];
    Words<W> w[PRELOAD_W ? U : 1];
};

template <typename T, int TPR, int V, int U, int CLUSTER, int OFFSET>
__device__ __forceinline__ void row_vector_held(const Row<T>& r, const T* __restrict__ w, const Dims& d, int t,
                                                int rank, const RowSum<TPR, CLUSTER>& row_sum,
                                                const Held<T, V, U>& h) {
    constexpr int W = Held<T, V, U>::W;
    constexpr int E = elems_per_word<T>;
    constexpr bool PRELOAD_W = Held<T, V, U>::PRELOAD_W;
    const int nvec = d.hidden / V;
    const int tail_start = nvec * V;
    // The tail's columns lie in chunk nvec / TPR: its owner takes them.
    const bool has_tail = t < d.hidden - tail_start && (nvec / TPR) % CLUSTER == rank;

    float s[U][V];
    float s_tail = 0.0f, sum_sq = 0.0f;
    if (r.active) {
        if (has_tail) s_tail = to_float(r.x[tail_start + t]) + to_float(r.res_in[tail_start + t]);
        sum_sq = s_tail * s_tail;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = (u * CLUSTER + rank) * TPR + t;
            const Words<W> xv = i < nvec ? h.x[u] : zero_words<W>();
            const Words<W> rv = i < nvec ? h.r[u] : zero_words<W>();
            Words<W> out;
#pragma unroll
            for (int j = 0; j < W; ++j) {
                float fx[E], fr[E];
                unpack_word(T{}, xv.w[j], fx);
                unpack_word(T{}, rv.w[j], fr);
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
            g = h.w[u];
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

// The loads-first path (see the header), for a launch of one row group per cluster (the YAML's grid) on the vector
// path. Issues this cluster's first group's loads (only whole accesses inside row (blockIdx.x / CLUSTER) *
// ROWS_PER_BLOCK + threadIdx.x / TPR, when < rows, and only if x, residual, w and both row strides are aligned to the
// access: nothing can fault whatever the launch), sets up the cluster's exchange, then checks the launch: vector_ok and
// every group covered by a cluster. If that holds, the loaded words are exactly what row_vector would load and
// row_vector's code (row_vector_held) normalises the row: returns true. Otherwise nothing has been written and no
// barrier passed: returns false (the early loads are dropped) and the kernel takes its general paths. A separate
// path, not the first round of the general loop: held through that loop the words cost up to +50 registers a thread.
// RES_NC: the residual through ld.global.nc (not in place).
template <typename T, int TPR, int V, int U, int ROWS_PER_BLOCK, int CLUSTER, int OFFSET, bool RES_NC>
__device__ __forceinline__ bool one_group(T* __restrict__ y, T* res_out, const T* __restrict__ x, const T* res_in,
                                          const T* __restrict__ w, const Dims& d, float* red,
                                          ClusterExchange<CLUSTER>& ex) {
    using H = Held<T, V, U>;
    constexpr unsigned BYTES = V * sizeof(T);
    constexpr int STEP = CLUSTER * TPR;  // accesses from one of a thread's accesses to the next
    // A 1-D cluster's rank is blockIdx.x % CLUSTER (grid.x is a multiple of CLUSTER): no special register to wait on.
    const int rank = static_cast<int>(blockIdx.x % CLUSTER);
    const int row_in_block = threadIdx.x / TPR;
    const int t = threadIdx.x % TPR;
    // 32-bit: a row number past 2^31 - 1 (wrapped, or negative as an int) stays inside the launch's rows or loads
    // nothing, and the launch check below sends such grids to the general paths.
    const int row = static_cast<int>((blockIdx.x / CLUSTER) * ROWS_PER_BLOCK + row_in_block);
    const int i0 = rank * TPR + t;  // access u is i0 + u * STEP
    // hidden / V as a shift: the same for hidden >= 0, negative (no loads either) otherwise.
    const int nvec = d.hidden >> log2_of(V);
    // Bitwise &: no branches. Pointers and strides aligned: every access is (from the arguments alone).
    const bool load = (row < d.rows) & all_aligned(BYTES, x, res_in, w) &
                      (((d.x_stride | d.res_stride) & (V - 1)) == 0);
    // The rows' addresses (uniform over the row) opaque to the optimiser: otherwise it folds row and column into one
    // 64-bit offset per thread and access, a longer chain to the first load.
    const unsigned long long urow = static_cast<unsigned>(row);  // no sign extension (no loads where row < 0)
    const T* xt = opaque(x + urow * d.x_stride) + i0 * V;
    const T* rt = opaque(res_in + urow * d.res_stride) + i0 * V;
    const T* wt = w + i0 * V;
    H h;
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const bool p = load & (i0 + u * STEP < nvec);
        load_words_if<H::W, true>(h.x[u], xt + u * STEP * V, p);
        load_words_if<H::W, RES_NC>(h.r[u], rt + u * STEP * V, p);
        if constexpr (H::PRELOAD_W) load_words_if<H::W, true>(h.w[u], wt + u * STEP * V, p);
    }
    // While the loads fly: the exchange's set-up (uniform over the cluster: its blocks take the same rows; done here
    // for the general paths too) and the launch checks (uniform over the grid).
    if (static_cast<long long>(blockIdx.x / CLUSTER) * ROWS_PER_BLOCK < d.rows) cluster_exchange_init<CLUSTER>(ex);
    // x % V == 0 and (x & (V - 1)) == 0 agree for negative x too. The clusters cover every group, and their rows are
    // below 2^31 (row is exact).
    const unsigned clusters = gridDim.x / CLUSTER;
    const bool fast = all_aligned(BYTES, x, res_in, res_out, y, w) &
                      (((d.x_stride | d.res_stride | d.y_stride) & (V - 1)) == 0) & (d.hidden / V <= STEP * U) &
                      (static_cast<long long>(clusters) * ROWS_PER_BLOCK >= d.rows) &
                      (clusters <= 0x7fffffffu / ROWS_PER_BLOCK);
    if (!fast) return false;
    const bool active = row < d.rows;
    const long long lrow = active ? row : 0;
    const Row<T> r{y + lrow * d.y_stride, res_out + lrow * d.res_stride, x + lrow * d.x_stride,
                   res_in + lrow * d.res_stride, active};
    const RowSum<TPR, CLUSTER> sum{red + row_in_block * (TPR / 32), &ex, 0, rank};
    row_vector_held<T, TPR, V, U, CLUSTER, OFFSET>(r, w, d, t, rank, sum, h);
    return true;
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

// IN_PLACE: res_out and res_in are the same buffer (add_rmsnorm_fwd_inplace).
template <typename T, int BLOCK, int VEC, int UNROLL, int ROWS_PER_BLOCK, int CLUSTER, int OFFSET, bool IN_PLACE>
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

    // Loads first (one_group, which also sets up the cluster's exchange) where the held words are at most 8 registers
    // per array: the decode sizes' configurations. Wider ones (the loads-first path's copy of the row code next to the
    // general one) cost up to +20 registers a thread and ptxas spills in some: those keep the general paths alone.
    constexpr bool LOADS_FIRST = VECTOR_PATH && VEC_BYTES / 4 * UNROLL <= 8;
    if constexpr (!LOADS_FIRST) {
        if (blockIdx.x / CLUSTER * ROWS_PER_BLOCK < d.rows) cluster_exchange_init<CLUSTER>(ex);
    }
    if constexpr (LOADS_FIRST) {
        if (one_group<T, TPR, VEC, UNROLL, ROWS_PER_BLOCK, CLUSTER, OFFSET, !IN_PLACE>(y, res_out, x, res_in, w, d,
                                                                                     red[0], ex))
            return;
    }

    const bool vector_ok = VECTOR_PATH && is_aligned(x, VEC_BYTES) && is_aligned(res_in, VEC_BYTES) &&
                           is_aligned(res_out, VEC_BYTES) && is_aligned(y, VEC_BYTES) && is_aligned(w, VEC_BYTES) &&
                           d.x_stride % VEC == 0 && d.res_stride % VEC == 0 && d.y_stride % VEC == 0 &&
                           d.hidden / VEC <= CLUSTER * TPR * UNROLL;
    const int row_in_block = threadIdx.x / TPR;
    const int t = threadIdx.x % TPR;
    const int rank = cluster_rank<CLUSTER>();
    const long long cluster = blockIdx.x / CLUSTER, clusters = gridDim.x / CLUSTER;
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
    // Programmatic launch (dependent_launch.cuh): the next kernel may start at once (a projection asks L2 for its
    // weights while this one waits for the kernel before and normalises; it still waits for this one to complete);
    // nothing read or written before the kernel before is done.
    ktune::dev::launch_dependents();
    ktune::dev::wait_prior_grids();
    const ktune::dev::add_rmsnorm::Dims d{rows, hidden, x_row_stride, residual_row_stride, y_row_stride,
                                          1.0f / static_cast<float>(hidden), eps};
    ktune::dev::add_rmsnorm::run<T, BLOCK, VEC, UNROLL, ROWS_PER_BLOCK, CLUSTER, OFFSET, false>(y, residual_out, x,
                                                                                                residual, w, d);
}

template <typename T, int BLOCK, int VEC, int UNROLL, int ROWS_PER_BLOCK, int CLUSTER, int OFFSET>
__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(BLOCK)
    add_rmsnorm_fwd_inplace(T* __restrict__ y, T* residual, const T* __restrict__ x, const T* __restrict__ w,
                            int rows, int hidden, long long x_row_stride, long long residual_row_stride,
                            long long y_row_stride, float eps) {
    // Programmatic launch (dependent_launch.cuh): the next kernel may start at once (a projection asks L2 for its
    // weights while this one waits for the kernel before and normalises; it still waits for this one to complete);
    // nothing read or written before the kernel before is done.
    ktune::dev::launch_dependents();
    ktune::dev::wait_prior_grids();
    const ktune::dev::add_rmsnorm::Dims d{rows, hidden, x_row_stride, residual_row_stride, y_row_stride,
                                          1.0f / static_cast<float>(hidden), eps};
    ktune::dev::add_rmsnorm::run<T, BLOCK, VEC, UNROLL, ROWS_PER_BLOCK, CLUSTER, OFFSET, true>(y, residual, x,
                                                                                               residual, w, d);
}
