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
// reduces its share of the row to a (max, sum of exp) pair and pushes it into every block's shared memory (an
// asynchronous store completing on the receiver's mbarrier, kernels/common/ktune_cluster.cuh: no cluster barrier, whose
// GPU-scope fence costs ~0.5 us a row at decode sizes); each block combines the CLUSTER pairs in rank order.
// CLUSTER = 1 is a plain block per row. PATH 1 keeps the row in registers, with two paths chosen per launch from the
// row length:
//   resident   the cluster's registers hold the row (cols <= CLUSTER * BLOCK * VEC * UNROLL): x is read from DRAM once.
//   streaming  longer rows: each block streams its share twice, an online max/sum pass and the output pass. The
//              second read mostly hits L2 (the rows in flight fit), so DRAM traffic stays close to read-once.
// Measured on an H100 (bf16, M = 4096): N = 32768 is fastest resident in one 1024-thread block (2702 GB/s, 90 % of
// copy); a 128256-column row is fastest streaming over a 2- or 4-block cluster (2447-2625 GB/s, 88 %) rather than
// resident over 8 blocks (2041 GB/s): a resident block holds at most 64 KiB of the row in registers, so with one or
// two such blocks per SM too few bytes are in flight, and DRAM idles while a block reduces and waits at the cluster
// barrier. PATH 2 (staged) removes that limit: each block's contiguous chunk of the row (ceil(cols / CLUSTER)
// elements) is copied into dynamic shared memory by bulk asynchronous copies (TMA, one thread issues them), so x is
// read once, no register holds data in flight, and several blocks per SM (up to 227 KiB of chunks) keep copies in
// flight while others reduce. E.g. bf16, N = 128256, CLUSTER 4: 62.6 KiB chunks, 3 blocks and 188 KiB in flight per
// SM, against 32-64 KiB for PATH 1; CLUSTER 8: 31.3 KiB chunks, 6 or 7 blocks per SM. The YAML tunes both.
// Clusters of 16 (non-portable on H100; the worker allows the size per kernel) halve the per-SM work of a decode row
// again.
//
// Tunables (template parameters, named as the YAML keys):
//   BLOCK    threads per block: a multiple of 32 in [32, 1024].
//   VEC      elements per vector access: a power of two with 8 <= VEC * sizeof(T) <= 16.
//   UNROLL   vector accesses each thread holds per pass, in [1, 32], with VEC * UNROLL * sizeof(T) <= 128 (32
//            registers) and BLOCK * VEC * UNROLL * sizeof(T) <= 64 KiB (a 1024-thread block gets 64 registers a
//            thread: 16 of row data leave enough for the rest; 32 spill).
//   CLUSTER  blocks per row (thread-block cluster size, __cluster_dims__): 1, 2, 4, 8 or 16 (8 is the portable
//            maximum; an H100 has 16 where the launch allows non-portable sizes).
//   PATH     1: registers (resident / streaming, above); 2: staged in shared memory, with UNROLL = 1 (unused) and
//            VEC * sizeof(T) = 16 (the passes read shared memory 16 bytes at a time). PATH 2 caps registers at 32 a
//            thread (__launch_bounds__ min blocks 2048 / BLOCK) so that registers never limit the blocks per SM below
//            what shared memory allows; its passes are unrolled only twice to fit without spills.
// PATH 1: vector access k of thread t in block rank b covers the VEC elements at ((k * CLUSTER + b) * BLOCK + t) * VEC
// (per pass of the streaming path), so every block reads BLOCK-wide coalesced runs. PATH 2: thread t takes the
// accesses t, t + BLOCK, ... of its block's chunk.
//
// Launch: block = BLOCK threads (1-D), grid.x = a multiple of CLUSTER (the launch fails otherwise); cluster i takes rows
// i, i + grid.x / CLUSTER, ... (grid.x = rows * CLUSTER gives one row each). PATH 1: static shared memory only. PATH 2:
// dynamic shared memory of at least ceil(floor(cols * sizeof(T) / 16) / CLUSTER) * 16 bytes (the YAML gives
// ceil_div(N * DTYPE_BYTES, 16 * CLUSTER) * 16); with less, the kernel takes the scalar path.
//
// Any cols, stride and alignment is correct. The vector paths need x and out aligned to VEC * sizeof(T) bytes and both
// strides multiples of VEC (checked once per launch); cols % VEC leftover elements (PATH 2: cols % (16 / sizeof(T)))
// are taken element-wise by the first threads of rank 0. Otherwise rows take the streaming path with element accesses
// (scalar path). PATH 2 needs 16-byte alignment (VEC * sizeof(T) = 16) for its bulk copies and falls back to the
// scalar path, not to PATH 1, so that PATH 1's register-heavy code does not weigh on its register budget.
//
// Loads first (PATH 1, load_first_row): at decode sizes (M = 1..16) the kernel is one chain of latencies (kernel
// start, the instruction fetch of the code before the first load, cold after an L2 flush, one DRAM round trip, the
// cluster exchange, the stores). The kernel used to set up the exchange, check the launch and pick the path first:
// its first load was the ~80th-100th instruction executed, after two jumps 13-17 KiB into the code. Now the kernel's
// first code computes each thread's resident-path addresses in its cluster's first row and issues those loads (~the
// 30th instruction); a thread loads only whole accesses inside that row, and only when x and its row stride are
// aligned to the access and the row fits the cluster's registers, so nothing can fault whatever the launch. The
// exchange's set-up and the launch checks run while the loads fly. On the resident path (vector_ok, the row fits)
// the loaded registers are exactly what softmax_row_resident would load and the same code reduces them (same bits);
// on the streaming and scalar paths the early loads are dropped. One copy of the resident code: a separate
// loads-first copy (or the other paths out of line, __noinline__) cost up to +30 registers a thread in ptxas's
// allocation. On the H100, same call, against the kernel before: best kernel time -3 to -9 % at M = 1 and 16 (bf16
// M=16 N=32768 3.10 -> 2.91 us, M=1 N=128256 3.39 -> 3.11 us), M >= 256 within 1 % (2026-11-26).
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

// ---- The staged path (PATH = 2) ---------------------------------------------------------------------------------
// The row's 16-byte units are cut into CLUSTER contiguous chunks, one per block (ceil(units / CLUSTER) each, the last
// ones shorter or empty), and each block's chunk is copied into dynamic shared memory by bulk asynchronous copies
// (cp.async.bulk, the TMA engine), issued by one thread and completing on an mbarrier. No registers hold the row in
// flight, so small blocks can keep a whole chunk each in flight and several of them share an SM: while one reduces or
// waits at the cluster barrier, the others' copies keep DRAM busy. The passes (max, sum, out) then read shared
// memory; fp32 keeps each exp in place of its x (same bits as the resident path's cached exps), 16-bit types
// recompute it in the output pass. The cols % (16 / sizeof(T)) last elements (the tail) are read by rank 0's first
// threads, as in the other paths. When a cluster has more rows (grid.x < rows * CLUSTER), the next row's copy is
// issued as soon as every thread is done with the chunk.

__device__ __forceinline__ unsigned dynamic_smem_bytes() {
    unsigned n;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(n));
    return n;
}

// Global -> this block's shared memory, completing on bar. dst, src 16-byte aligned; bytes a multiple of 16.
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     shared_address(dst)),
                 "l"(src), "r"(bytes), "r"(shared_address(bar))
                 : "memory");
}

// The 16-byte-unit chunk of a row that one block stages. Depends on cols only, so every row of a launch has the same.
template <typename T, int CLUSTER>
struct StagedChunk {
    static constexpr int EPU = 16 / int(sizeof(T));  // elements per 16-byte unit
    int first;                                       // first element of this block's chunk (a multiple of EPU)
    unsigned bytes;                                  // chunk bytes (a multiple of 16; 0 for an empty chunk)
    __device__ __forceinline__ StagedChunk(int cols, int rank) {
        const int units = cols / EPU;
        const int per = units / CLUSTER + (units % CLUSTER != 0);
        const int begin = min(units, rank * per);  // rank * per <= units + CLUSTER: no overflow
        first = begin * EPU;
        bytes = static_cast<unsigned>(min(units, begin + per) - begin) * 16u;
    }
    // The shared memory a launch must give each block: per * 16 bytes (the YAML's shared_bytes is at least this).
    __device__ __forceinline__ static unsigned bytes_needed(int cols) {
        const int units = cols / EPU;
        return static_cast<unsigned>(units / CLUSTER + (units % CLUSTER != 0)) * 16u;
    }
};

// Thread 0: announces and issues the copy of this block's chunk of the row at x_row into buf, in pieces of at most
// 32 KiB (several copies in flight from one thread; each far above the size where a copy's fixed cost matters).
template <typename T, int CLUSTER>
__device__ __forceinline__ void stage_chunk(T* buf, const T* x_row, const StagedChunk<T, CLUSTER>& c,
                                            unsigned long long* bar) {
    constexpr unsigned PIECE = 32768;
    mbarrier_expect_bytes(bar, c.bytes);
    const char* src = reinterpret_cast<const char*>(x_row + c.first);
    char* dst = reinterpret_cast<char*>(buf);
    for (unsigned off = 0; off < c.bytes; off += PIECE)
        bulk_copy(dst + off, src + off, min(PIECE, c.bytes - off), bar);
}

// One vector access of V elements of T at p, as floats (the staged path reads its chunk in shared memory so).
template <typename T, int V>
__device__ __forceinline__ void load_floats(const T* p, float (&f)[V]) {
    Access<T, V> a;
    a.load(p);
    a.unpack(f);
}

// One row from the staged chunk in buf (its copy was issued on bar; parity = the phase to wait for).
template <typename T, int BLOCK, int V, int CLUSTER>
__device__ __forceinline__ void softmax_row_staged(const RowArgs<T>& a, Scratch<BLOCK, CLUSTER>& sh, T* buf, int first,
                                                   int nv, unsigned parity) {
    const int t = threadIdx.x;
    const bool has_tail = a.rank == 0 && t < a.tail;
    const float x_tail = has_tail ? to_float(a.x[a.tail_start + t]) : 0.0f;  // overlaps the copy
    mbarrier_wait<false>(&sh.bar, parity);

    float mx[V];  // V maxima per thread: V independent chains (latency, for the short rows of decode)
#pragma unroll
    for (int e = 0; e < V; ++e) mx[e] = neg_inf();
#pragma unroll 2
    for (int i = t; i < nv; i += BLOCK) {
        float f[V];
        load_floats<T, V>(buf + i * V, f);
#pragma unroll
        for (int e = 0; e < V; ++e) mx[e] = fmaxf(mx[e], f[e] * a.k);
    }
    float m = has_tail ? x_tail * a.k : neg_inf();
#pragma unroll
    for (int e = 0; e < V; ++e) m = fmaxf(m, mx[e]);
    const float bm = block_max<BLOCK / 32>(m, sh.max);

    // V sums per thread, one per lane of the access: V times shorter rounding chains (at most 64 terms each for fp32
    // at the YAML's problems, as its tolerances assume) and V independent adds in flight.
    float s = 0.0f, e_tail = 0.0f;
    if (bm != neg_inf()) {  // the block saw at least one element
        if (has_tail) s = e_tail = fast_exp2(fmaf(x_tail, a.k, -bm));
        float acc[V];
#pragma unroll
        for (int e = 0; e < V; ++e) acc[e] = 0.0f;
#pragma unroll 2
        for (int i = t; i < nv; i += BLOCK) {
            float f[V];
            load_floats<T, V>(buf + i * V, f);
#pragma unroll
            for (int e = 0; e < V; ++e) {
                f[e] = fast_exp2(fmaf(f[e], a.k, -bm));
                acc[e] += f[e];
            }
            if constexpr (sizeof(T) == 4) Access<T, V>::store(buf + i * V, f);  // the thread's own elements only
        }
#pragma unroll
        for (int e = 0; e < V; ++e) s += acc[e];
    }
    s = group_sum<BLOCK / 32>(s, sh.sum);
    m = bm;
    combine_cluster<CLUSTER>(m, s, sh.ex, a.round, a.rank);

    const float inv = 1.0f / s;
    const float factor = CLUSTER == 1 ? inv : fast_exp2(bm - m) * inv;
    const bool cached = sizeof(T) == 4 && bm != neg_inf();  // buf holds the exps (else x, e.g. all -inf)
#pragma unroll 2
    for (int i = t; i < nv; i += BLOCK) {
        float f[V];
        load_floats<T, V>(buf + i * V, f);
#pragma unroll
        for (int e = 0; e < V; ++e) f[e] = cached ? f[e] * factor : fast_exp2(fmaf(f[e], a.k, -m)) * inv;
        Access<T, V>::store(a.out + first + static_cast<long long>(i) * V, f);
    }
    if (has_tail) a.out[a.tail_start + t] = from_float<T>(e_tail * factor);
}

// The staged walk over this cluster's rows. buf holds StagedChunk::bytes_needed(cols) bytes (checked by the caller);
// x and the x row stride are 16-byte aligned, out and its stride VEC-aligned.
template <typename T, int BLOCK, int VEC, int CLUSTER>
__device__ __forceinline__ void softmax_rows_staged(T* out, const T* x, int rows, int cols, long long x_row_stride,
                                                    long long out_row_stride, float scale, Scratch<BLOCK, CLUSTER>& sh,
                                                    T* buf) {
    const int rank = CLUSTER > 1 ? static_cast<int>(__clusterRelativeBlockRank()) : 0;
    const long long clusters = gridDim.x / CLUSTER;
    const StagedChunk<T, CLUSTER> chunk(cols, rank);
    const int units = cols / StagedChunk<T, CLUSTER>::EPU;
    const int tail_start = units * StagedChunk<T, CLUSTER>::EPU;
    const int nv = static_cast<int>(chunk.bytes / (VEC * sizeof(T)));  // this block's VEC-element accesses
    long long r = blockIdx.x / CLUSTER;
    if (threadIdx.x == 0) {
        mbarrier_init(&sh.bar);
        if (r < rows) stage_chunk<T, CLUSTER>(buf, x + r * x_row_stride, chunk, &sh.bar);
    }
    __syncthreads();  // the barrier is initialised before anyone waits on it
    unsigned parity = 0;
    for (int round = 0; r < rows; r += clusters, parity ^= 1u, ++round) {
        const RowArgs<T> a{out + r * out_row_stride, x + r * x_row_stride, nv, tail_start, cols - tail_start,
                           scale * log2e, rank, round};
        softmax_row_staged<T, BLOCK, VEC, CLUSTER>(a, sh, buf, chunk.first, nv, parity);
        if (r + clusters < rows) {
            // Every thread's reads (and fp32's exp writes) of buf are done and ordered before the async proxy
            // overwrites it.
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            __syncthreads();
            if (threadIdx.x == 0)
                stage_chunk<T, CLUSTER>(buf, x + (r + clusters) * x_row_stride, chunk, &sh.bar);
        }
    }
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

// PATH 1's loads-first prologue (see the header): issues this cluster's first row's resident-path loads into xb,
// only whole accesses inside row blockIdx.x / CLUSTER, and only if x and its row stride are aligned to the access and
// the row fits the cluster's registers (nothing can fault whatever the launch). When the kernel then takes the
// resident path (vector_ok and the row fits), xb holds exactly what softmax_row_resident would load for that row.
template <typename T, int BLOCK, int VEC, int UNROLL, int CLUSTER>
__device__ __forceinline__ void load_first_row(Access<T, VEC> (&xb)[UNROLL], const T* __restrict__ x, int rows,
                                               int cols, long long x_row_stride) {
    constexpr unsigned BYTES = VEC * sizeof(T);
    constexpr int HELD = CLUSTER * BLOCK * UNROLL;  // accesses the cluster holds
    constexpr int STRIDE = CLUSTER * BLOCK * VEC;   // elements from one of a thread's accesses to the next
    // A 1-D cluster's rank is blockIdx.x % CLUSTER (grid.x is a multiple of CLUSTER): no special register to wait on.
    const int rank = static_cast<int>(blockIdx.x % CLUSTER);
    const int r = static_cast<int>(blockIdx.x / CLUSTER);
    // cols / VEC as a shift: the same for cols >= 0, negative (no loads either) otherwise.
    const int nvec = cols >> log2_of(VEC);
    const int i0 = rank * BLOCK + threadIdx.x;  // access u is i0 + u * CLUSTER * BLOCK, at xt + u * STRIDE
    // The row's address (uniform) as a value the compiler cannot take apart: otherwise it folds row and column into
    // one 64-bit offset per thread, a longer chain to the first load.
    const T* xt = opaque(x + r * x_row_stride) + static_cast<long long>(i0) * VEC;
    // Bitwise &: no branches. x and its stride aligned: every access is (from the arguments alone).
    const bool load = (r < rows) & (nvec <= HELD) & all_aligned(BYTES, x) & ((x_row_stride & (VEC - 1)) == 0);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
        xb[u].load_nc_if(xt + u * STRIDE, load & (i0 + u * CLUSTER * BLOCK < nvec));
}

// The resident walk over this cluster's rows (softmax_rows<RowPath::resident>) with its first row already in xb
// (load_first_row): the same code reduces it, so the same bits; later rows (a grid of fewer clusters than rows) load
// as softmax_row_resident does.
template <typename T, int BLOCK, int VEC, int UNROLL, int CLUSTER>
__device__ __forceinline__ void softmax_rows_resident_first_held(Access<T, VEC> (&xb)[UNROLL], T* out, const T* x,
                                                                 int rows, int cols, long long x_row_stride,
                                                                 long long out_row_stride, float scale,
                                                                 Scratch<BLOCK, CLUSTER>& sh) {
    const int rank = CLUSTER > 1 ? static_cast<int>(__clusterRelativeBlockRank()) : 0;
    const long long clusters = gridDim.x / CLUSTER;
    const int nvec = cols / VEC;
    int round = 0;
    for (long long r = blockIdx.x / CLUSTER; r < rows; r += clusters, ++round) {
        const RowArgs<T> a{out + r * out_row_stride, x + r * x_row_stride, nvec, nvec * VEC, cols - nvec * VEC,
                           scale * log2e, rank, round};
        if (round > 0) load_row_resident<T, BLOCK, VEC, UNROLL, CLUSTER>(a, xb);
        softmax_row_resident_loaded<T, BLOCK, VEC, UNROLL, CLUSTER>(a, sh, xb);
    }
}

}  // namespace ktune::dev::softmax

template <typename T, int BLOCK, int VEC, int UNROLL, int CLUSTER, int PATH>
__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(BLOCK, PATH == 2 ? 2048 / BLOCK : 0)
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
    static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4 || CLUSTER == 8 || CLUSTER == 16,
                  "softmax_fwd: CLUSTER in {1, 2, 4, 8, 16}");
    static_assert(PATH == 1 || PATH == 2, "softmax_fwd: PATH is 1 (registers) or 2 (staged)");
    static_assert(PATH == 1 || (UNROLL == 1 && VEC * sizeof(T) == 16),
                  "softmax_fwd: PATH 2 takes UNROLL 1 and 16-byte accesses");

    using namespace ktune::dev;
    using softmax::RowPath;
    __shared__ softmax::Scratch<BLOCK, CLUSTER> sh;
    if constexpr (PATH == 1) {
        // Loads first (load_first_row), then the exchange's set-up and the launch checks while they fly.
        softmax::Access<T, VEC> xb[UNROLL];
        softmax::load_first_row<T, BLOCK, VEC, UNROLL, CLUSTER>(xb, x, rows, cols, x_row_stride);
        // Uniform over the cluster: its blocks take the same rows.
        if (static_cast<int>(blockIdx.x / CLUSTER) < rows) cluster_exchange_init<CLUSTER>(sh.ex);
        // Uniform over the grid: every block of a cluster takes the same path, so the exchange rounds pair up.
        const bool vector_ok = all_aligned(VEC * sizeof(T), x, out) &
                               (((x_row_stride | out_row_stride) & (VEC - 1)) == 0);
        if (vector_ok && cols / VEC <= CLUSTER * BLOCK * UNROLL)
            softmax::softmax_rows_resident_first_held<T, BLOCK, VEC, UNROLL, CLUSTER>(
                xb, out, x, rows, cols, x_row_stride, out_row_stride, scale, sh);
        else if (vector_ok)  // the early loads (if any) are dropped
            softmax::softmax_rows<RowPath::streaming, T, BLOCK, VEC, UNROLL, CLUSTER>(out, x, rows, cols, x_row_stride,
                                                                                      out_row_stride, scale, sh);
        else
            softmax::softmax_rows<RowPath::scalar, T, BLOCK, VEC, UNROLL, CLUSTER>(out, x, rows, cols, x_row_stride,
                                                                                   out_row_stride, scale, sh);
    } else {
        // The cluster's exchange set up before any load (uniform over the cluster: its blocks take the same rows).
        if (static_cast<int>(blockIdx.x / CLUSTER) < rows) cluster_exchange_init<CLUSTER>(sh.ex);
        constexpr unsigned VEC_BYTES = VEC * sizeof(T);
        const bool vector_ok = is_aligned(x, VEC_BYTES) && is_aligned(out, VEC_BYTES) && x_row_stride % VEC == 0 &&
                               out_row_stride % VEC == 0;
        // Uniform over the grid: every block of a cluster takes the same path, so the exchange rounds pair up.
        extern __shared__ __align__(128) unsigned char softmax_stage[];
        // vector_ok with 16-byte accesses makes x, its rows and every chunk 16-byte aligned, as bulk copies need.
        if (vector_ok && softmax::StagedChunk<T, CLUSTER>::bytes_needed(cols) <= softmax::dynamic_smem_bytes())
            softmax::softmax_rows_staged<T, BLOCK, VEC, CLUSTER>(out, x, rows, cols, x_row_stride, out_row_stride,
                                                                 scale, sh, reinterpret_cast<T*>(softmax_stage));
        else  // misaligned rows (or too little shared memory): correct, not fast; keeps the registers to the staged path
            softmax::softmax_rows<RowPath::scalar, T, BLOCK, VEC, UNROLL, CLUSTER>(out, x, rows, cols, x_row_stride,
                                                                                   out_row_stride, scale, sh);
    }
}
