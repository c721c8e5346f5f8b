#pragma once
// Row softmax: what both tuned kernels share (the block and cluster reductions, the row walks in registers).
//
//   out[r, c] = exp(scale * x[r, c] - m_r) / sum_c' exp(scale * x[r, c'] - m_r),   m_r = max_c scale * x[r, c]
//
// for r < rows, c < cols. Rows of x and out start x_row_stride / out_row_stride elements apart (>= cols); padding is
// neither read nor written. Math in fp32 (exp2 of a pre-scaled argument, one MUFU.EX2 each), out rounded once to T
// (float, __half, __nv_bfloat16). The kernels, alternatives of search_spaces/softmax.yaml (op softmax, variant fwd),
// take the same arguments: softmax_fwd_registers.cuh (the row in registers) and softmax_fwd_staged.cuh (the row staged
// in shared memory by bulk copies); reference: kernels/softmax/softmax_reference.cuh.
//
// One launch, no global scratch: a row is split over a cluster of CLUSTER blocks (Hopper thread-block clusters are
// co-scheduled by the hardware, so blocks waiting on each other cannot deadlock, unlike a grid-wide wait). Each block
// reduces its share of the row to a (max, sum of exp) pair and pushes it into every block's shared memory (an
// asynchronous store completing on the receiver's mbarrier, kernels/common/ktune_cluster.cuh: no cluster barrier, whose
// GPU-scope fence costs ~0.5 us a row at decode sizes); each block combines the CLUSTER pairs in rank order.
// CLUSTER = 1 is a plain block per row. Clusters of 16 (non-portable on H100; the worker allows the size per kernel)
// halve the per-SM work of a decode row again.
//
// The row walks here: resident (the cluster's registers hold the row: x is read from DRAM once) and streaming (each
// block streams its share twice, an online max/sum pass and the output pass; the second read mostly hits L2). The
// streaming walk with element accesses (RowPath::scalar) is both kernels' path for rows that are not aligned to
// their vector accesses: correct, not fast.
//
// Launch (both kernels): block = BLOCK threads (1-D), grid.x = a multiple of CLUSTER (the launch fails otherwise);
// cluster i takes rows i, i + grid.x / CLUSTER, ... (grid.x = rows * CLUSTER gives one row each). Any cols, stride and
// alignment is correct.
#include "kernels/common/ktune_cluster.cuh"

namespace ktune::dev::softmax {

constexpr float log2e = 1.4426950408889634f;

__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

// 2^x as one MUFU.EX2 (relative error ~2^-22). exp2f lowers to ex2.approx.f32 without .ftz, which costs extra
// instructions around the MUFU to produce subnormal results; softmax terms below 2^-126 are far under any tolerance.
__device__ __forceinline__ float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// Max over the block; same calling rules as group_sum (ktune_device.cuh): every thread calls it, scratch holds
// WARPS floats and is not reused before the next __syncthreads().
template <int WARPS>
__device__ __forceinline__ float block_max(float v, float* scratch) {
    v = warp_max(v);
    if constexpr (WARPS > 1) {
        const int lane = threadIdx.x & 31;
        if (lane == 0) scratch[threadIdx.x >> 5] = v;
        __syncthreads();
        v = warp_max(lane < WARPS ? scratch[lane] : neg_inf());
    }
    return v;
}

// Turns this block's (m, s) for the row into the row's (m, s): one (max, sum) pair per block goes to every block of
// the cluster (kernels/common/ktune_cluster.cuh; `round`: the row's index among this cluster's rows). Every thread of
// every block of the cluster calls it once per row. A block that saw no element passes (-inf, 0). Every block combines
// the same CLUSTER pairs in the same order: bit-identical results cluster-wide.
template <int CLUSTER>
__device__ __forceinline__ void combine_cluster(float& m, float& s, ClusterExchange<CLUSTER>& ex, int round,
                                                int rank) {
    if constexpr (CLUSTER > 1) {
        cluster_exchange<CLUSTER>(ex, round,
                                  static_cast<unsigned long long>(__float_as_uint(s)) << 32 | __float_as_uint(m), rank);
        const int lane = threadIdx.x & 31;
        float pm = neg_inf(), ps = 0.0f;
        if (lane < CLUSTER) {
            const unsigned long long v = ex.values[round & 1][lane];
            pm = __uint_as_float(static_cast<unsigned>(v));
            ps = __uint_as_float(static_cast<unsigned>(v >> 32));
        }
        m = warp_max(pm);
        s = warp_sum(ps > 0.0f ? ps * fast_exp2(pm - m) : 0.0f);
    }
}

// One access of V elements held as loaded: packed 32-bit words when it is at least 4 bytes (two 16-bit elements per
// register), else the elements themselves (the scalar path's 2-byte accesses). p is aligned to V * sizeof(T) bytes.
template <typename T, int V, bool WORDS = (V * sizeof(T) >= 4)>
struct Access;

template <typename T, int V>
struct Access<T, V, true> {
    static constexpr int W = V * int(sizeof(T)) / 4;
    Words<W> w;
    __device__ __forceinline__ void load(const T* p) { w = load_words<W>(p); }
    // ld.global.nc (what the compiler makes of load() on x), issued only if `pred` (load_words_if).
    __device__ __forceinline__ void load_nc_if(const T* p, bool pred) { load_words_if<W>(w, p, pred); }
    __device__ __forceinline__ void unpack(float* f) const {
#pragma unroll
        for (int j = 0; j < W; ++j) unpack_word(T{}, w.w[j], f + j * elems_per_word<T>);
    }
    __device__ __forceinline__ static void store(T* p, const float* f) {
        Words<W> o;
#pragma unroll
        for (int j = 0; j < W; ++j) o.w[j] = pack_word<T>(f + j * elems_per_word<T>);
        store_words<W>(p, o);
    }
};

template <typename T, int V>
struct Access<T, V, false> {
    T v[V];
    __device__ __forceinline__ void load(const T* p) {
#pragma unroll
        for (int e = 0; e < V; ++e) v[e] = p[e];
    }
    __device__ __forceinline__ void unpack(float* f) const {
#pragma unroll
        for (int e = 0; e < V; ++e) f[e] = to_float(v[e]);
    }
    __device__ __forceinline__ static void store(T* p, const float* f) {
#pragma unroll
        for (int e = 0; e < V; ++e) p[e] = from_float<T>(f[e]);
    }
};

// Per-launch constants and per-row pointers shared by the row functions.
template <typename T>
struct RowArgs {
    T* __restrict__ out;
    const T* __restrict__ x;
    int nvec;        // whole V-element accesses in the row
    int tail_start;  // nvec * V
    int tail;        // cols - tail_start elements, taken by rank 0's first threads
    float k;         // scale * log2(e): exp(scale x - m) = exp2(x k - m k)
    int rank;        // this block's rank in the cluster
    int round;       // the row's index among this cluster's rows (its cluster exchange)
};

template <int BLOCK, int CLUSTER>
struct Scratch {
    float max[BLOCK / 32];
    float sum[BLOCK / 32];
    ClusterExchange<CLUSTER> ex;  // the blocks' (max, sum) pairs
    unsigned long long bar;       // the staged path's mbarrier: its bulk copies complete on it
};

// The resident path: the block's share of the row (U accesses of V elements per thread) is read once and kept in
// registers as packed words. With CACHE_EXP each exp is computed once, in the sum pass, relative to the block's max,
// and kept as a float; the output pass rescales it by exp2(block max - row max) / sum. Otherwise the output pass
// recomputes it from the packed words (twice the MUFU work, but 16-bit rows need half the registers). Measured on an
// H100: caching wins for fp32 (floats take no more registers than the words) and for single-block rows; for 16-bit
// rows in clusters the extra registers cost a block per SM and 30 % of the bandwidth, so those recompute.
// softmax_row_resident_held: the row once loaded (xb[u] holds access (u * CLUSTER + rank) * BLOCK + t where that is
// < nvec, x_tail the tail element of the threads that have one); softmax_row_resident loads it and calls it, and so
// does the loads-first walk (softmax_rows_resident_first_held), whose first row was loaded before the launch checks.
template <typename T, int BLOCK, int V, int U, int CLUSTER>
__device__ __forceinline__ void softmax_row_resident_held(const RowArgs<T>& a, Scratch<BLOCK, CLUSTER>& sh,
                                                          const Access<T, V> (&xb)[U], float x_tail) {
    constexpr bool CACHE_EXP =
        (sizeof(T) == 4 || CLUSTER == 1) && V * U * 4 <= 128 && BLOCK * V * U * 4 <= 65536;
    const int t = threadIdx.x;
    const bool has_tail = a.rank == 0 && t < a.tail;

    float m = has_tail ? x_tail * a.k : neg_inf();
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int i = (u * CLUSTER + a.rank) * BLOCK + t;
        if (i < a.nvec) {
            float f[V];
            xb[u].unpack(f);
#pragma unroll
            for (int e = 0; e < V; ++e) m = fmaxf(m, f[e] * a.k);
        }
    }
    const float bm = block_max<BLOCK / 32>(m, sh.max);

    float ex[CACHE_EXP ? U : 1][CACHE_EXP ? V : 1];
    float s = 0.0f, e_tail = 0.0f;
    if (bm != neg_inf()) {  // the block saw at least one element
        if (has_tail) s = e_tail = fast_exp2(fmaf(x_tail, a.k, -bm));
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = (u * CLUSTER + a.rank) * BLOCK + t;
            if (i < a.nvec) {
                float f[V];
                xb[u].unpack(f);
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    const float v = fast_exp2(fmaf(f[e], a.k, -bm));
                    if constexpr (CACHE_EXP) ex[u][e] = v;
                    s += v;
                }
            }
        }
    }
    s = group_sum<BLOCK / 32>(s, sh.sum);
    m = bm;
    combine_cluster<CLUSTER>(m, s, sh.ex, a.round, a.rank);

    const float inv = 1.0f / s;
    // exp2(x k - m) = exp2(x k - bm) * exp2(bm - m); CLUSTER 1 has m = bm.
    const float factor = CLUSTER == 1 ? inv : fast_exp2(bm - m) * inv;
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int i = (u * CLUSTER + a.rank) * BLOCK + t;
        if (i < a.nvec) {
            float f[V];
            if constexpr (CACHE_EXP) {
#pragma unroll
                for (int e = 0; e < V; ++e) f[e] = ex[u][e] * factor;
            } else {
                xb[u].unpack(f);
#pragma unroll
                for (int e = 0; e < V; ++e) f[e] = fast_exp2(fmaf(f[e], a.k, -m)) * inv;
            }
            Access<T, V>::store(a.out + static_cast<long long>(i) * V, f);
        }
    }
    if (has_tail) a.out[a.tail_start + t] = from_float<T>(e_tail * factor);
}

// The resident row's vector accesses of this thread, as softmax_row_resident_held takes them.
template <typename T, int BLOCK, int V, int U, int CLUSTER>
__device__ __forceinline__ void load_row_resident(const RowArgs<T>& a, Access<T, V> (&xb)[U]) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int i = (u * CLUSTER + a.rank) * BLOCK + static_cast<int>(threadIdx.x);
        if (i < a.nvec) xb[u].load(a.x + static_cast<long long>(i) * V);
    }
}

// softmax_row_resident_held with the row's held accesses (xb) and its tail element loaded first.
template <typename T, int BLOCK, int V, int U, int CLUSTER>
__device__ __forceinline__ void softmax_row_resident_loaded(const RowArgs<T>& a, Scratch<BLOCK, CLUSTER>& sh,
                                                            const Access<T, V> (&xb)[U]) {
    const int t = threadIdx.x;
    const bool has_tail = a.rank == 0 && t < a.tail;
    const float x_tail = has_tail ? to_float(a.x[a.tail_start + t]) : 0.0f;
    softmax_row_resident_held<T, BLOCK, V, U, CLUSTER>(a, sh, xb, x_tail);
}

template <typename T, int BLOCK, int V, int U, int CLUSTER>
__device__ __forceinline__ void softmax_row_resident(const RowArgs<T>& a, Scratch<BLOCK, CLUSTER>& sh) {
    Access<T, V> xb[U];
    load_row_resident<T, BLOCK, V, U, CLUSTER>(a, xb);
    softmax_row_resident_loaded<T, BLOCK, V, U, CLUSTER>(a, sh, xb);
}

// The streaming path, for rows longer than the cluster's registers (V = VEC) and for misaligned rows (V = 1, then
// nvec = cols and no tail): an online max / sum over the block's share, pass by pass, then a second sweep that
// re-reads x (from L2 while it fits) and writes out.
template <typename T, int BLOCK, int V, int U, int CLUSTER>
__device__ __forceinline__ void softmax_row_streaming(const RowArgs<T>& a, Scratch<BLOCK, CLUSTER>& sh) {
    constexpr int STEP = CLUSTER * BLOCK * U;  // accesses per pass of the whole cluster
    const int t = threadIdx.x;
    const bool has_tail = a.rank == 0 && t < a.tail;
    const float x_tail = has_tail ? to_float(a.x[a.tail_start + t]) : 0.0f;

    float m = has_tail ? x_tail * a.k : neg_inf();
    float s = has_tail ? fast_exp2(fmaf(x_tail, a.k, -m)) : 0.0f;
#pragma unroll 1
    for (int base = 0; base < a.nvec; base += STEP) {
        Access<T, V> xb[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = base + (u * CLUSTER + a.rank) * BLOCK + t;
            if (i < a.nvec) xb[u].load(a.x + static_cast<long long>(i) * V);
        }
        float cm = neg_inf();
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = base + (u * CLUSTER + a.rank) * BLOCK + t;
            if (i < a.nvec) {
                float f[V];
                xb[u].unpack(f);
#pragma unroll
                for (int e = 0; e < V; ++e) cm = fmaxf(cm, f[e] * a.k);
            }
        }
        if (cm == neg_inf()) continue;  // nothing of this pass is this thread's
        if (cm > m) {
            s *= fast_exp2(m - cm);  // m = -inf: s is 0 and stays 0
            m = cm;
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = base + (u * CLUSTER + a.rank) * BLOCK + t;
            if (i < a.nvec) {
                float f[V];
                xb[u].unpack(f);
#pragma unroll
                for (int e = 0; e < V; ++e) s += fast_exp2(fmaf(f[e], a.k, -m));
            }
        }
    }
    const float bm = block_max<BLOCK / 32>(m, sh.max);
    s = m == neg_inf() ? 0.0f : s * fast_exp2(m - bm);
    m = bm;
    s = group_sum<BLOCK / 32>(s, sh.sum);
    combine_cluster<CLUSTER>(m, s, sh.ex, a.round, a.rank);

    const float inv = 1.0f / s;
#pragma unroll 1
    for (int base = 0; base < a.nvec; base += STEP) {
        Access<T, V> xb[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = base + (u * CLUSTER + a.rank) * BLOCK + t;
            if (i < a.nvec) xb[u].load(a.x + static_cast<long long>(i) * V);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = base + (u * CLUSTER + a.rank) * BLOCK + t;
            if (i < a.nvec) {
                float f[V];
                xb[u].unpack(f);
#pragma unroll
                for (int e = 0; e < V; ++e) f[e] = fast_exp2(fmaf(f[e], a.k, -m)) * inv;
                Access<T, V>::store(a.out + static_cast<long long>(i) * V, f);
            }
        }
    }
    if (has_tail) a.out[a.tail_start + t] = from_float<T>(fast_exp2(fmaf(x_tail, a.k, -m)) * inv);
}

enum class RowPath { resident, streaming, scalar };

// Walks this cluster's rows with one path for the whole launch (the same rows, in the same order, in every block of
// the cluster: the exchange rounds pair up).
template <RowPath PATH, typename T, int BLOCK, int VEC, int UNROLL, int CLUSTER>
__device__ __forceinline__ void softmax_rows(T* out, const T* x, int rows, int cols, long long x_row_stride,
                                             long long out_row_stride, float scale, Scratch<BLOCK, CLUSTER>& sh) {
    constexpr int V = PATH == RowPath::scalar ? 1 : VEC;
    const int rank = CLUSTER > 1 ? static_cast<int>(__clusterRelativeBlockRank()) : 0;
    const long long clusters = gridDim.x / CLUSTER;
    const int nvec = cols / V;
    int round = 0;
    for (long long r = blockIdx.x / CLUSTER; r < rows; r += clusters, ++round) {
        const RowArgs<T> a{out + r * out_row_stride, x + r * x_row_stride, nvec, nvec * V, cols - nvec * V,
                           scale * log2e, rank, round};
        if constexpr (PATH == RowPath::resident)
            softmax_row_resident<T, BLOCK, V, UNROLL, CLUSTER>(a, sh);
        else
            softmax_row_streaming<T, BLOCK, V, UNROLL, CLUSTER>(a, sh);
    }
}

}  // namespace ktune::dev::softmax
