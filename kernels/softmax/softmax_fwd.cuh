#pragma once
// Row softmax, the tuned kernel: a thread-block cluster per row.
//
//   out[r, c] = exp(scale * x[r, c] - m_r) / sum_c' exp(scale * x[r, c'] - m_r),   m_r = max_c scale * x[r, c]
//
// for r < rows, c < cols. Rows of x and out start x_row_stride / out_row_stride elements apart (>= cols); padding is
// neither read nor written. Math in fp32 (exp2 of a pre-scaled argument, one MUFU.EX2 each), out rounded once to T
// (float, __half, __nv_bfloat16). Driven by search_spaces/softmax.yaml (op softmax, variant fwd); reference:
// kernels/softmax/softmax_reference.cuh (same arguments).
//
// One launch, no global scratch: a row is split over a cluster of CLUSTER blocks (Hopper thread-block clusters are
// co-scheduled by the hardware, so blocks waiting on each other cannot deadlock, unlike a grid-wide wait). Each block
// reduces its share of the row to a (max, sum of exp) pair, publishes it in its shared memory, and after one cluster
// barrier every block reads all CLUSTER pairs through distributed shared memory and combines them in rank order.
// CLUSTER = 1 is a plain block per row. Two paths, chosen per launch from the row length:
//   resident   the cluster's registers hold the row (cols <= CLUSTER * BLOCK * VEC * UNROLL): x is read from DRAM once.
//   streaming  longer rows: each block streams its share twice, an online max/sum pass and the output pass. The
//              second read mostly hits L2 (the rows in flight fit), so DRAM traffic stays close to read-once.
// Measured on an H100 (bf16, M = 4096): N = 32768 is fastest resident in one 1024-thread block (2702 GB/s, 90 % of
// copy); a 128256-column row is fastest streaming over a 2-block cluster (2447 GB/s) rather than resident over 8
// blocks (2041 GB/s): with one or two big blocks per SM, DRAM idles while a resident block reduces and waits at the
// cluster barrier. The YAML therefore tunes both paths.
//
// Tunables (template parameters, named as the YAML keys):
//   BLOCK    threads per block: a multiple of 32 in [32, 1024].
//   VEC      elements per vector access: a power of two with 8 <= VEC * sizeof(T) <= 16.
//   UNROLL   vector accesses each thread holds per pass, in [1, 32], with VEC * UNROLL * sizeof(T) <= 128 (32
//            registers) and BLOCK * VEC * UNROLL * sizeof(T) <= 64 KiB (a 1024-thread block gets 64 registers a
//            thread: 16 of row data leave enough for the rest; 32 spill).
//   CLUSTER  blocks per row (thread-block cluster size, __cluster_dims__): 1, 2, 4 or 8 (8 is the portable maximum).
// Vector access k of thread t in block rank b covers the VEC elements at ((k * CLUSTER + b) * BLOCK + t) * VEC (per
// pass of the streaming path), so every block reads BLOCK-wide coalesced runs.
//
// Launch: block = BLOCK threads (1-D), grid.x = a multiple of CLUSTER (the launch fails otherwise); cluster i takes rows
// i, i + grid.x / CLUSTER, ... (grid.x = rows * CLUSTER gives one row each). Static shared memory only.
//
// Any cols, stride and alignment is correct. The vector paths need x and out aligned to VEC * sizeof(T) bytes and both
// strides multiples of VEC (checked once per launch); cols % VEC leftover elements are taken element-wise by the
// first threads of rank 0. Otherwise rows take the streaming path with element accesses (scalar path).
#include "kernels/common/ktune_device.cuh"

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

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
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

// One (max, sum) pair per block and row, read by the cluster's blocks through distributed shared memory.
struct Partial {
    float max;
    float sum;
};

// Turns this block's (m, s) for the row into the row's (m, s). Every thread of every block of the cluster calls it
// once per row, then end_row() once (after its last use of `slot`'s row). A block that saw no element passes
// (-inf, 0). Every block combines the same CLUSTER pairs in the same order: bit-identical results cluster-wide.
template <int CLUSTER>
__device__ __forceinline__ void combine_cluster(float& m, float& s, Partial* slot) {
    if constexpr (CLUSTER > 1) {
        if (threadIdx.x == 0) *slot = Partial{m, s};
        __cluster_barrier_arrive();  // release: the slot is visible to the cluster after the wait
        __cluster_barrier_wait();
        const int lane = threadIdx.x & 31;
        Partial p{neg_inf(), 0.0f};
        if (lane < CLUSTER) p = *static_cast<const Partial*>(__cluster_map_shared_rank(slot, lane));
        m = warp_max(p.max);
        s = warp_sum(p.sum > 0.0f ? p.sum * fast_exp2(p.max - m) : 0.0f);
        __cluster_barrier_arrive();  // this block is done reading the other blocks' slots
    }
}

// Before the slot is rewritten (next row) or the block exits: every block has read every slot of this row.
template <int CLUSTER>
__device__ __forceinline__ void end_row() {
    if constexpr (CLUSTER > 1) __cluster_barrier_wait();
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
};

template <int BLOCK>
struct Scratch {
    float max[BLOCK / 32];
    float sum[BLOCK / 32];
    Partial slot;
};

// The resident path: the block's share of the row (U accesses of V elements per thread) is read once and kept in
// registers as packed words. With CACHE_EXP each exp is computed once, in the sum pass, relative to the block's max,
// and kept as a float; the output pass rescales it by exp2(block max - row max) / sum. Otherwise the output pass
// recomputes it from the packed words (twice the MUFU work, but 16-bit rows need half the registers). Measured on an
// H100: caching wins for fp32 (floats take no more registers than the words) and for single-block rows; for 16-bit
// rows in clusters the extra registers cost a block per SM and 30 % of the bandwidth, so those recompute.
template <typename T, int BLOCK, int V, int U, int CLUSTER>
__device__ __forceinline__ void softmax_row_resident(const RowArgs<T>& a, Scratch<BLOCK>& sh) {
    constexpr bool CACHE_EXP =
        (sizeof(T) == 4 || CLUSTER == 1) && V * U * 4 <= 128 && BLOCK * V * U * 4 <= 65536;
    const int t = threadIdx.x;
    Access<T, V> xb[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int i = (u * CLUSTER + a.rank) * BLOCK + t;
        if (i < a.nvec) xb[u].load(a.x + static_cast<long long>(i) * V);
    }
    const bool has_tail = a.rank == 0 && t < a.tail;
    const float x_tail = has_tail ? to_float(a.x[a.tail_start + t]) : 0.0f;

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
    combine_cluster<CLUSTER>(m, s, &sh.slot);

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
    end_row<CLUSTER>();
}

// The streaming path, for rows longer than the cluster's registers (V = VEC) and for misaligned rows (V = 1, then
// nvec = cols and no tail): an online max / sum over the block's share, pass by pass, then a second sweep that
// re-reads x (from L2 while it fits) and writes out.
template <typename T, int BLOCK, int V, int U, int CLUSTER>
__device__ __forceinline__ void softmax_row_streaming(const RowArgs<T>& a, Scratch<BLOCK>& sh) {
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
    combine_cluster<CLUSTER>(m, s, &sh.slot);

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
    end_row<CLUSTER>();
}

enum class RowPath { resident, streaming, scalar };

// Walks this cluster's rows with one path for the whole launch (the same rows, in the same order, in every block of
// the cluster: the cluster barriers pair up).
template <RowPath PATH, typename T, int BLOCK, int VEC, int UNROLL, int CLUSTER>
__device__ __forceinline__ void softmax_rows(T* out, const T* x, int rows, int cols, long long x_row_stride,
                                             long long out_row_stride, float scale, Scratch<BLOCK>& sh) {
    constexpr int V = PATH == RowPath::scalar ? 1 : VEC;
    const int rank = CLUSTER > 1 ? static_cast<int>(__clusterRelativeBlockRank()) : 0;
    const long long clusters = gridDim.x / CLUSTER;
    const int nvec = cols / V;
    for (long long r = blockIdx.x / CLUSTER; r < rows; r += clusters) {
        const RowArgs<T> a{out + r * out_row_stride, x + r * x_row_stride, nvec, nvec * V, cols - nvec * V,
                           scale * log2e, rank};
        if constexpr (PATH == RowPath::resident)
            softmax_row_resident<T, BLOCK, V, UNROLL, CLUSTER>(a, sh);
        else
            softmax_row_streaming<T, BLOCK, V, UNROLL, CLUSTER>(a, sh);
    }
}

}  // namespace ktune::dev::softmax

template <typename T, int BLOCK, int VEC, int UNROLL, int CLUSTER>
__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(BLOCK)
    softmax_fwd(T* __restrict__ out, const T* __restrict__ x, int rows, int cols, long long x_row_stride,
                long long out_row_stride, float scale) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 2, "softmax_fwd: T is float, __half or __nv_bfloat16");
    static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0, "softmax_fwd: BLOCK a multiple of 32 in [32, 1024]");
    static_assert(VEC >= 1 && (VEC & (VEC - 1)) == 0, "softmax_fwd: VEC is a power of two");
    static_assert(VEC * sizeof(T) <= 16, "softmax_fwd: VEC * sizeof(T) <= 16");
    static_assert(VEC * sizeof(T) >= 8, "softmax_fwd: VEC * sizeof(T) >= 8 (narrower accesses are not tuned)");
    static_assert(UNROLL >= 1 && UNROLL <= 32, "softmax_fwd: UNROLL in [1, 32]");
    static_assert(VEC * UNROLL * sizeof(T) <= 128, "softmax_fwd: VEC * UNROLL * sizeof(T) <= 128 (registers)");
    static_assert(BLOCK * VEC * UNROLL * sizeof(T) <= 65536,
                  "softmax_fwd: BLOCK * VEC * UNROLL * sizeof(T) <= 64 KiB (registers)");
    static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4 || CLUSTER == 8, "softmax_fwd: CLUSTER in {1, 2, 4, 8}");

    using namespace ktune::dev;
    using softmax::RowPath;
    __shared__ softmax::Scratch<BLOCK> sh;
    constexpr unsigned VEC_BYTES = VEC * sizeof(T);
    const bool vector_ok =
        is_aligned(x, VEC_BYTES) && is_aligned(out, VEC_BYTES) && x_row_stride % VEC == 0 && out_row_stride % VEC == 0;
    // Uniform over the grid: every block of a cluster takes the same path, so the cluster barriers pair up.
    if (vector_ok) {
        if (cols / VEC <= CLUSTER * BLOCK * UNROLL)
            softmax::softmax_rows<RowPath::resident, T, BLOCK, VEC, UNROLL, CLUSTER>(out, x, rows, cols, x_row_stride,
                                                                                     out_row_stride, scale, sh);
        else
            softmax::softmax_rows<RowPath::streaming, T, BLOCK, VEC, UNROLL, CLUSTER>(out, x, rows, cols, x_row_stride,
                                                                                      out_row_stride, scale, sh);
    } else {
        softmax::softmax_rows<RowPath::scalar, T, BLOCK, VEC, UNROLL, CLUSTER>(out, x, rows, cols, x_row_stride,
                                                                               out_row_stride, scale, sh);
    }
}
