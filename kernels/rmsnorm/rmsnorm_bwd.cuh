#pragma once
// RMSNorm backward, the tuned kernel. With rstd[r] = rsqrt(mean_c(x[r, :]^2) + eps) recomputed from x:
//
//   dx[r, c] = rstd[r] * dy[r, c] * w[c] - rstd[r]^3 * mean_c(dy[r, :] * w * x[r, :]) * x[r, c]
//   dw[c]    = sum_r dy[r, c] * x[r, c] * rstd[r]                                       (fp32 output, see below)
//
// (y = x * rstd * w, d rstd / d x[c] = -rstd^3 * x[c] / hidden.) for r < rows, c < hidden. All arithmetic in fp32; dx
// rounded once to T. x, dy and dx rows start their own row stride apart (elements, >= hidden); padding columns are
// never read or written. T: float, __half, __nv_bfloat16.
// Driven by search_spaces/rmsnorm_bwd.yaml (op rmsnorm, variant bwd); reference:
// kernels/rmsnorm/rmsnorm_bwd_reference.cuh.
//
// dw is fp32 whatever T is: it is a sum over every row, and rounding it to T would throw away what the fp32
// accumulation bought (the caller adds it to an fp32 gradient or rounds it itself; Liger-Kernel returns T).
// It is deterministic and its summation shape is fixed by the problem (kernels/rmsnorm/rmsnorm_bwd_layout.cuh): leaf
// partial p sums rows p, p + P, ... in row order, and a fan-in-8 tree sums the partials in index order. The block that
// completes the last child of a tree node sums that node (atomic arrival counter in scratch, reset by that block), so
// the whole op is one launch, with no block ever waiting for another (outside its cluster). A block that holds all
// children of a level-1 node (ROWS_PER_BLOCK = 8) sums that node itself through shared memory: its leaves never go to
// scratch. Results therefore do not depend on the grid, and depend on the tunables only through rstd: its row sum
// (like the forward kernel's) is reduced in an order set by the thread layout, so rstd, and hence dx and dw, can
// differ between configurations in the last bit.
//
// Columns are split over a thread-block cluster of CLUSTER blocks (Hopper; co-scheduled, so the blocks of a cluster
// may wait on each other): every block of a cluster works on the same rows, each on its share of the columns, and the
// two row sums are exchanged through distributed shared memory (one cluster barrier per row step). Small M then gets
// CLUSTER times the blocks, and each block a CLUSTER-th of the row. Column ownership: chunk j of CHUNK = TPR * VEC
// columns (c / CHUNK == j) belongs to rank j % CLUSTER, on every path, for the leaves and for every tree node; the tree
// counts arrivals per rank (a 4-bit counter per rank, two counter words per node), so the rank-r blocks sum the rank-r
// columns of a node without any cross-rank dependency.
//
// Tunables (template parameters, named as the YAML keys):
//   BLOCK           threads per block: a multiple of 32 * ROWS_PER_BLOCK, at most 1024.
//   VEC             elements per vector access: a power of two, VEC * sizeof(T) in {4, 8, 16} bytes for the vector
//                   path (VEC 1 for 16-bit types always takes the scalar path).
//   UNROLL          vector accesses each thread holds per row, 1..32. The vector path needs the row to fit in one
//                   pass (CLUSTER * threads_per_row * VEC * UNROLL >= hidden): x, dy, w and the thread's fp32 dw
//                   partials stay in registers. Otherwise the scalar path runs (correct, slow): the YAML keeps such
//                   configurations out.
//   ROWS_PER_BLOCK  leaf partials a block works on at once (a divisor of 8, so they share one tree node):
//                   threads_per_row = BLOCK / ROWS_PER_BLOCK, a multiple of 32.
//   ROWS_IN_FLIGHT  1, 2, 8 or 16. 1 or 2: rows of x and dy a group holds in registers. 2 issues the loads of a
//                   partial's next row before reducing the current one (loads always in flight, twice the registers
//                   for x and dy); 1 loads each row when it is reached. With CLUSTER 1 and ROWS_PER_BLOCK 1 both
//                   take the one-row path at rows == 1 (one_row below: loads first, one block reduction; on the H100
//                   bf16 H=2048 2.21 -> 1.89 us, 2026-11-26); VEC may then be 4 bytes wide too.
//                   16 (WHOLE_ROWS): the whole-problem path for small M (ROWS_PER_BLOCK 1, grid: one cluster). The
//                   cluster owns every row: each thread loads its columns of 16 rows at once, the 32 row sums of the
//                   batch go through one block barrier and one cluster barrier, and dw is summed in registers along
//                   the same tree (no scratch rows, fences or arrivals). Taken when rows <= 64 (so P = rows: one row
//                   per partial), hidden % VEC == 0 and the vector path's alignment hold; otherwise the grid-stride
//                   path below runs on the one cluster (correct, slow).
//                   8 (NODE_ROWS): the node path for small M (grid: one cluster; ROWS_PER_BLOCK = ceil(rows / 8) thread
//                   groups per block, group g holding its columns of rows 8g .. 8g + 7, the level-1 node g of the dw
//                   tree). Every load issued first thing in the kernel, before the launch checks (node_load), one
//                   block barrier and one cluster barrier for the row sums, dw summed in registers (nodes) and
//                   through shared memory (root). Taken when
//                   1 <= rows <= 8 * ROWS_PER_BLOCK, hidden % VEC == 0, one pass and the vector path's alignment hold;
//                   otherwise the grid-stride path below runs on the one cluster (correct, slow).
//   CLUSTER         blocks per row (thread-block cluster size, __cluster_dims__): 1, 2, 4, 8 or 16. 16 is beyond the
//                   portable size: the launcher allows it per kernel (the non-portable cluster size attribute; an H100
//                   has it), and the node path at M = 16 gains most from it (twice the SMs pulling the rows).
//
// Launch: block = BLOCK threads (1-D), grid.x = a multiple of CLUSTER: clusters loop over groups of ROWS_PER_BLOCK
// partials (grid stride); ceil_div(dw_partials(M, H), ROWS_PER_BLOCK) * CLUSTER gives one group per cluster
// (ROWS_IN_FLIGHT 8 and 16: CLUSTER, one cluster; further clusters idle on their paths). Static shared memory only.
//
// Why the whole-problem path: at M = 16 the tree costs a chain of dependent round trips after the kernel's own loads
// (node row stored, fence, atomic, the last block re-reads the rows, stores dw: 6-8 us measured on an H100 against
// 2.7 us at M = 1, where P = 1 has no tree). One cluster holding every row needs one DRAM round trip for x, dy and w
// together, one cluster barrier, then the stores.
// scratch: dw_scratch_floats(rows, hidden) floats, 16-byte aligned, zero-filled before first use (see the layout file).
// The vector path needs x, dy, dx, w aligned to VEC * sizeof(T) bytes, row strides that are multiples of VEC, and dw
// and scratch 16-byte aligned (checked once per launch); otherwise every row takes the scalar path. The one-row path
// (rows == 1) needs neither strides nor scratch: only the pointers' alignment and hidden % VEC == 0.
#include "kernels/common/ktune_cluster.cuh"
#include "kernels/rmsnorm/rmsnorm_bwd_layout.cuh"

namespace ktune::dev::rmsnorm_bwd {

using namespace ktune::rmsnorm_bwd_layout;

__device__ __forceinline__ void warp_sum2(float& a, float& b) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        a += __shfl_xor_sync(0xffffffffu, a, offset);
        b += __shfl_xor_sync(0xffffffffu, b, offset);
    }
}

// Two sums over a group of GROUP_WARPS warps at once: the shuffles interleave, one shared-memory step. Same contract
// as group_sum (kernels/common/ktune_device.cuh): scratch holds GROUP_WARPS float2 for this group and is not reused
// before the next __syncthreads(); every thread of the block calls it.
template <int GROUP_WARPS>
__device__ __forceinline__ float2 group_sum2(float a, float b, float2* scratch) {
    warp_sum2(a, b);
    if constexpr (GROUP_WARPS > 1) {
        const int lane = threadIdx.x & 31;
        const int warp_in_group = (threadIdx.x >> 5) % GROUP_WARPS;
        if (lane == 0) scratch[warp_in_group] = make_float2(a, b);
        __syncthreads();
        if constexpr (GROUP_WARPS <= 8) {
            a = 0.0f;
            b = 0.0f;
#pragma unroll
            for (int i = 0; i < GROUP_WARPS; ++i) {
                const float2 s = scratch[i];
                a += s.x;
                b += s.y;
            }
        } else {
            const float2 s = lane < GROUP_WARPS ? scratch[lane] : make_float2(0.0f, 0.0f);
            a = warp_sum(s.x);
            b = warp_sum(s.y);
        }
    }
    return make_float2(a, b);
}

// The same over the group's warps in every block of the cluster: each warp publishes its pair in its block's shared
// memory, one cluster barrier (which also orders the block's own warps), then every warp reads all GROUP_WARPS *
// CLUSTER pairs (same order everywhere: every block gets bit-identical sums). scratch: as group_sum2, double-buffered
// by the caller: a slot is rewritten two calls later, after the next call's barrier, which no block passes before
// every block has read this call's slots. Every thread of every block of the cluster calls it.
template <int GROUP_WARPS, int CLUSTER>
__device__ __forceinline__ float2 cluster_sum2(float a, float b, float2* scratch) {
    warp_sum2(a, b);
    const int lane = threadIdx.x & 31;
    if (lane == 0) scratch[(threadIdx.x >> 5) % GROUP_WARPS] = make_float2(a, b);
    __cluster_barrier_arrive();  // release
    __cluster_barrier_wait();    // acquire
    constexpr int N = GROUP_WARPS * CLUSTER;
    a = 0.0f;
    b = 0.0f;
#pragma unroll
    for (int k0 = 0; k0 < N; k0 += 32) {
        const int k = k0 + lane;
        if (N % 32 == 0 || k < N) {
            const float2 s = *static_cast<const float2*>(__cluster_map_shared_rank(scratch + k % GROUP_WARPS,
                                                                                   k / GROUP_WARPS));
            a += s.x;
            b += s.y;
        }
    }
    warp_sum2(a, b);
    return make_float2(a, b);
}

template <int GROUP_WARPS, int CLUSTER>
__device__ __forceinline__ float2 row_sum2(float a, float b, float2* scratch) {
    if constexpr (CLUSTER > 1)
        return cluster_sum2<GROUP_WARPS, CLUSTER>(a, b, scratch);
    else
        return group_sum2<GROUP_WARPS>(a, b, scratch);
}

// One dw term, the same expression on every path so that every path adds the same values.
__device__ __forceinline__ float dw_term(float dy, float x, float rstd, float acc) { return fmaf(dy, x * rstd, acc); }

// dx for one element: rstd * dy * w - k * x, with k = rstd^3 * mean(dy * w * x).
__device__ __forceinline__ float dx_value(float dy, float w, float x, float rstd, float k) {
    return fmaf(rstd, dy * w, -k * x);
}

// One access of a row: its dx (rounded to T) and its dw terms added to acc (V = W words of elements), the same
// expressions on every path.
template <typename T, int W>
__device__ __forceinline__ Words<W> dx_and_dw(const Words<W>& x, const Words<W>& g, const Words<W>& w, float rstd,
                                              float k, float* acc) {
    constexpr int E = elems_per_word<T>;
    Words<W> out;
#pragma unroll
    for (int j = 0; j < W; ++j) {
        float fx[E], fg[E], fw[E], fd[E];
        unpack_word(T{}, x.w[j], fx);
        unpack_word(T{}, g.w[j], fg);
        unpack_word(T{}, w.w[j], fw);
#pragma unroll
        for (int e = 0; e < E; ++e) {
            fd[e] = dx_value(fg[e], fw[e], fx[e], rstd, k);
            acc[j * E + e] = dw_term(fg[e], fx[e], rstd, acc[j * E + e]);
        }
        out.w[j] = pack_word<T>(fd);
    }
    return out;
}

// ---- the dw tree ---------------------------------------------------------------------------------------------------
//
// The kernel walks the tree of dw_tree() (kernels/rmsnorm/rmsnorm_bwd_layout.cuh) level by level with running offsets
// instead of holding its arrays: they would live in registers (or local memory) through the whole row loop.

struct Tree {
    float* rows;   // scratch row 0 (after the counters)
    unsigned* counters;
    float* dw;     // the root
    int hidden;
    long long stride;  // floats per scratch row
};

// Sums `children` rows starting at `src` in index order and writes them to `out` (dw when `root`), on the columns
// of rank `rank` only (chunks of CHUNK columns, chunk j owned by rank j % CLUSTER). Every thread of the block. The
// children were written by other blocks: read through L2 (ld.global.cg), never a stale L1 line.
// Not inlined: its eight quads in flight would otherwise set the register count of the row loop (108 instead of 64
// for bf16, BLOCK 256, UNROLL 1).
template <int BLOCK, int CHUNK, int CLUSTER>
__device__ __noinline__ void sum_children(const Tree& tree, const float* src, int children, float* out, bool root,
                                          int rank) {
    static_assert(CHUNK % 4 == 0, "rmsnorm_bwd: chunks of whole quads");
    constexpr int QPC = CHUNK / 4;  // quads per chunk
    const int hidden = tree.hidden;
    const long long stride = tree.stride;
    const int chunks = (hidden + CHUNK - 1) / CHUNK;
    const int owned = rank < chunks ? (chunks - rank + CLUSTER - 1) / CLUSTER : 0;
    const bool quads = is_aligned(src, 16) && (!root || is_aligned(out, 16));  // stride: whole quads
    if (quads) {
        const int nquad = owned * QPC;
#pragma unroll 1  // one quad per thread at a time: unrolled further, this would set the kernel's registers
        for (int q = threadIdx.x; q < nquad; q += BLOCK) {
            const int col = ((q / QPC) * CLUSTER + rank) * CHUNK + (q % QPC) * 4;
            if (col >= hidden) continue;
            // Two batches of four loads (the sum stays in child order): eight quads in flight, with their eight row
            // pointers, would need more than the 64 registers a 1024-thread block has.
            const float* sc = src + col;
            float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
            for (int b = 0; b < DW_TREE_FAN; b += 4) {
                float4 v[4];
#pragma unroll
                for (int c = 0; c < 4; ++c)
                    if (b + c < children) v[c] = __ldcg(reinterpret_cast<const float4*>(sc + (b + c) * stride));
#pragma unroll
                for (int c = 0; c < 4; ++c)
                    if (b + c < children) {
                        if (b + c == 0) {
                            s = v[0];
                        } else {
                            s.x += v[c].x;
                            s.y += v[c].y;
                            s.z += v[c].z;
                            s.w += v[c].w;
                        }
                    }
            }
            if (!root || col + 4 <= hidden) {
                *reinterpret_cast<float4*>(out + col) = s;  // rows below the root own their padding
            } else {
                const float sv[4] = {s.x, s.y, s.z, s.w};
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    if (col + e < hidden) out[col + e] = sv[e];
            }
        }
    } else {
        const int ncol = owned * CHUNK;
#pragma unroll 1
        for (int k = threadIdx.x; k < ncol; k += BLOCK) {
            const int col = ((k / CHUNK) * CLUSTER + rank) * CHUNK + k % CHUNK;
            if (col >= hidden) continue;
            float s = __ldcg(src + col);
            for (int c = 1; c < children; ++c) s += __ldcg(src + c * stride + col);
            out[col] = s;
        }
    }
}

// Called by every thread of the block after the block wrote `count` consecutive nodes of level `level` starting at
// `first` (all children of one node of the next level, or some of them) on its rank's columns. Climbs while this
// block completes the last child of a node for its rank (4-bit arrival counter per rank, 8 ranks per counter word).
template <int BLOCK, int CHUNK, int CLUSTER>
__device__ __forceinline__ void tree_arrive(const Tree& tree, int P, int level, int first, int count, int rank,
                                            int* s_last) {
    int nodes = P;              // nodes of the current level
    long long level_row = 0;    // scratch row of the current level's first node
    int counter_base = 0;       // counter of the next level's first node
    for (int l = 0; l < level; ++l) {
        const int parent_nodes = (nodes + DW_TREE_FAN - 1) / DW_TREE_FAN;
        level_row += nodes;
        counter_base += parent_nodes;
        nodes = parent_nodes;
    }
    const unsigned shift = 4u * static_cast<unsigned>(rank % DW_RANKS_PER_COUNTER);
    while (nodes > 1) {
        const int parent_nodes = (nodes + DW_TREE_FAN - 1) / DW_TREE_FAN;
        const int parent = first / DW_TREE_FAN;
        const int remaining = nodes - parent * DW_TREE_FAN;
        const int children = remaining < DW_TREE_FAN ? remaining : DW_TREE_FAN;
        // Release: the barrier orders every thread's row stores before thread 0's fence, which is cumulative over
        // them, and the fence before the arrival. Acquire: thread 0's fence after the last arrival, then the barrier,
        // orders the other children's rows before every thread's loads (the grid-sync pattern: one fence per block).
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            unsigned* c = tree.counters + DW_COUNTERS_PER_NODE * (counter_base + parent) + rank / DW_RANKS_PER_COUNTER;
            const unsigned old = atomicAdd(c, static_cast<unsigned>(count) << shift);
            const bool last = ((old >> shift) & 15u) + static_cast<unsigned>(count) == static_cast<unsigned>(children);
            if (last) {
                atomicAnd(c, ~(15u << shift));  // every child has arrived for this rank; other ranks share the word
                __threadfence();
            }
            *s_last = last;
        }
        __syncthreads();
        // s_last is next written after the next step's first barrier, which every thread reaches after reading it.
        if (*s_last == 0) return;
        const bool root = parent_nodes == 1;
        const float* src = tree.rows + (level_row + static_cast<long long>(parent) * DW_TREE_FAN) * tree.stride;
        float* out = root ? tree.dw : tree.rows + (level_row + nodes + parent) * tree.stride;
        sum_children<BLOCK, CHUNK, CLUSTER>(tree, src, children, out, root, rank);
        level_row += nodes;
        counter_base += parent_nodes;
        nodes = parent_nodes;
        first = parent;
        count = 1;
    }
}

// An opaque copy: the compiler cannot see through it, so it unpacks the words again at their next use instead of
// keeping (or hoisting) the unpacked floats, which take twice the registers for 16-bit T.
// One access's terms (x, dy and w words) added onto sxx (x^2) and sgx (dy * w * x), in element order.
template <typename T, int W>
__device__ __forceinline__ void held_access_sums(const Words<W>& x, const Words<W>& g, const Words<W>& w, float& sxx,
                                                 float& sgx) {
    constexpr int E = elems_per_word<T>;
#pragma unroll
    for (int j = 0; j < W; ++j) {
        float fx[E], fg[E], fw[E];
        unpack_word(T{}, x.w[j], fx);
        unpack_word(T{}, g.w[j], fg);
        unpack_word(T{}, w.w[j], fw);
#pragma unroll
        for (int e = 0; e < E; ++e) {
            sxx = fmaf(fx[e], fx[e], sxx);
            sgx = fmaf(fg[e] * fw[e], fx[e], sgx);
        }
    }
}

// This thread's sums over one row it holds (U vector accesses of x, dy and w), added onto sxx (x^2) and sgx
// (dy * w * x), which hold 0 or the row's tail element: in the same order on every path.
template <typename T, int U, int W>
__device__ __forceinline__ void held_row_sums(const Words<W> (&x)[U], const Words<W> (&g)[U], const Words<W> (&w)[U],
                                              float& sxx_io, float& sgx_io) {
    float sxx = sxx_io, sgx = sgx_io;
#pragma unroll
    for (int u = 0; u < U; ++u) held_access_sums<T, W>(x[u], g[u], w[u], sxx, sgx);
    sxx_io = sxx;
    sgx_io = sgx;
}

// An opaque copy: the compiler cannot see through it, so it unpacks the words again at their next use instead of
// keeping (or hoisting) the unpacked floats, which take twice the registers for 16-bit T.
template <typename T, int W>
__device__ __forceinline__ void keep_packed(Words<W>& a) {
    if constexpr (elems_per_word<T> > 1) {
#pragma unroll
        for (int j = 0; j < W; ++j) asm volatile("mov.b32 %0, %0;" : "+r"(a.w[j]));
    }
}

// ---- rows ----------------------------------------------------------------------------------------------------------

struct Rows {
    long long x_stride, dy_stride, dx_stride;
    int rows, hidden;
    float inv_hidden, eps;
    int rank;  // in the cluster
};

// Where a group's dw goes: its leaf row (scratch, or dw when P == 1), or, when the block holds every child of its
// level-1 node, that node's row (dw when it is the root), summed in the block through `stage`.
struct DwOut {
    float* leaf;
    float* node;  // nullptr: leaf mode
    int count;    // the block's active partials (node mode)
    float* stage; // shared: (ROWS_PER_BLOCK - 1) * TPR * VEC floats
};

// One row's x and dy as the vector path holds them: U accesses of W words (zeros past the row) and the tail element.
template <typename T, int TPR, int V, int U, int W, int CLUSTER>
__device__ __forceinline__ void load_row(const T* __restrict__ xr, const T* __restrict__ gr, int nvec, int t, int rank,
                                         bool has_tail, int tail_start, Words<W> (&xv)[U], Words<W> (&gv)[U],
                                         float& x_tail, float& g_tail) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int i = (u * CLUSTER + rank) * TPR + t;
        xv[u] = i < nvec ? load_words<W>(xr + static_cast<long long>(i) * V) : zero_words<W>();
        gv[u] = i < nvec ? load_words<W>(gr + static_cast<long long>(i) * V) : zero_words<W>();
    }
    x_tail = has_tail ? to_float(xr[tail_start + t]) : 0.0f;
    g_tail = has_tail ? to_float(gr[tail_start + t]) : 0.0f;
}

// Node mode: group 0 sums the groups' partials in partial order (the tree's order for a level-1 node: s = p0, then
// s += p1, ...) and writes the node on this thread's columns. Every thread of the block.
// V fp32 values to dst, which is 16-byte aligned for V >= 4 (8-byte for V = 2): float4 / float2 / float stores.
template <int V>
__device__ __forceinline__ void store_floats(float* dst, const float (&v)[V]) {
    if constexpr (V % 4 == 0) {
#pragma unroll
        for (int e = 0; e < V; e += 4)
            *reinterpret_cast<float4*>(dst + e) = make_float4(v[e], v[e + 1], v[e + 2], v[e + 3]);
    } else if constexpr (V == 2) {
        *reinterpret_cast<float2*>(dst) = make_float2(v[0], v[1]);
    } else {
        dst[0] = v[0];
    }
}

template <int TPR, int V, int U, int RPB, int CLUSTER>
__device__ __forceinline__ void node_sum(const float (&acc)[U][V], float acc_tail, bool has_tail, int tail_start,
                                         int nvec, int t, int g, int rank, const DwOut& o) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int i = (u * CLUSTER + rank) * TPR + t;
        const bool own = i < nvec;  // the same for every group: the thread layout repeats per group
        if constexpr (RPB > 1) {
            if (g > 0 && g < o.count && own) {
                float* st = o.stage + (static_cast<long long>(g - 1) * TPR + t) * V;
#pragma unroll
                for (int e = 0; e < V; ++e) st[e] = acc[u][e];
            }
            __syncthreads();
        }
        if (g == 0 && own) {
            float s[V];
#pragma unroll
            for (int e = 0; e < V; ++e) s[e] = acc[u][e];
#pragma unroll
            for (int h = 1; h < RPB; ++h)
                if (h < o.count) {
                    const float* st = o.stage + (static_cast<long long>(h - 1) * TPR + t) * V;
#pragma unroll
                    for (int e = 0; e < V; ++e) s[e] += st[e];
                }
            store_floats<V>(o.node + static_cast<long long>(i) * V, s);
        }
        if constexpr (RPB > 1) __syncthreads();  // the stage is rewritten next
    }
    // The tail: fewer than V columns, owned by the threads t < hidden - tail_start of one rank (has_tail).
    if constexpr (RPB > 1) {
        if (g > 0 && g < o.count && has_tail) o.stage[(g - 1) * TPR + t] = acc_tail;
        __syncthreads();
    }
    if (g == 0 && has_tail) {
        float s = acc_tail;
#pragma unroll
        for (int h = 1; h < RPB; ++h)
            if (h < o.count) s += o.stage[(h - 1) * TPR + t];
        o.node[tail_start + t] = s;
    }
    if constexpr (RPB > 1) __syncthreads();  // the next group's node may follow with no barrier in its row loop
}

// The vector path for one group of threads (TPR per partial in each block of the cluster): partial p's rows, x, dy
// and the partial in registers. V-element accesses of W words, U per thread. With PREFETCH the next row's loads are
// issued before this row's reduction, so a group always has a row in flight (at the cost of a second row of
// registers). The partial's first row is loaded at entry, ahead of w and of everything else (at decode sizes the
// kernel is one chain of latencies from launch to the last store). make_out() gives the DwOut, called after the rows.
// Every thread of every block of the cluster calls it with the same `steps`.
template <typename T, int TPR, int V, int U, bool PREFETCH, int RPB, int CLUSTER, typename MakeOut>
__device__ __forceinline__ void partial_vector(T* __restrict__ dx, const T* __restrict__ x, const T* __restrict__ dy,
                                               const T* __restrict__ w, const MakeOut& make_out, const Rows& a, int p,
                                               int P,
                                               bool p_active, int steps, int t, int g, float2 (*red)[32], int slot,
                                               int& parity) {
    constexpr int W = V * int(sizeof(T)) / 4;
    static_assert(W >= 1 && W * 4 == V * int(sizeof(T)), "rmsnorm_bwd vector path: accesses of 4, 8 or 16 bytes");
    const int rank = a.rank;
    const int nvec = a.hidden / V;
    const int tail_start = nvec * V;
    // The tail's columns lie in chunk nvec / TPR: its owner takes them.
    const bool has_tail = t < a.hidden - tail_start && (nvec / TPR) % CLUSTER == rank;

    // The first row (p < P <= rows: it exists): into the next-row registers with PREFETCH, this row's without.
    Words<W> xv[U], gv[U];                                      // this row
    Words<W> xn[PREFETCH ? U : 1], gn[PREFETCH ? U : 1];        // the next one, in flight
    float x_tail = 0.0f, g_tail = 0.0f, xn_tail = 0.0f, gn_tail = 0.0f;
    if (p_active) {
        if constexpr (PREFETCH)
            load_row<T, TPR, V, U, W, CLUSTER>(x + p * a.x_stride, dy + p * a.dy_stride, nvec, t, rank, has_tail,
                                               tail_start, xn, gn, xn_tail, gn_tail);
        else
            load_row<T, TPR, V, U, W, CLUSTER>(x + p * a.x_stride, dy + p * a.dy_stride, nvec, t, rank, has_tail,
                                               tail_start, xv, gv, x_tail, g_tail);
    }

    Words<W> wv[U];
    float acc[U][V];
    float w_tail = 0.0f, acc_tail = 0.0f;
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int i = (u * CLUSTER + rank) * TPR + t;
        wv[u] = p_active && i < nvec ? load_words<W>(w + static_cast<long long>(i) * V) : zero_words<W>();
#pragma unroll
        for (int e = 0; e < V; ++e) acc[u][e] = 0.0f;
    }
    if (p_active && has_tail) w_tail = to_float(w[tail_start + t]);
#pragma unroll 1
    for (int k = 0; k < steps; ++k) {
        const long long row = p + static_cast<long long>(k) * P;
        const bool active = p_active && row < a.rows;
#pragma unroll
        for (int u = 0; u < U; ++u) keep_packed<T, W>(wv[u]);  // w stays packed across rows
        if constexpr (PREFETCH) {
#pragma unroll
            for (int u = 0; u < U; ++u) {
                xv[u] = xn[u];
                gv[u] = gn[u];
            }
            x_tail = xn_tail;
            g_tail = gn_tail;
            const long long next = row + P;
            if (p_active && next < a.rows)
                load_row<T, TPR, V, U, W, CLUSTER>(x + next * a.x_stride, dy + next * a.dy_stride, nvec, t, rank,
                                                   has_tail, tail_start, xn, gn, xn_tail, gn_tail);
        } else if (active && k > 0) {
            load_row<T, TPR, V, U, W, CLUSTER>(x + row * a.x_stride, dy + row * a.dy_stride, nvec, t, rank, has_tail,
                                               tail_start, xv, gv, x_tail, g_tail);
        }
        float sxx = 0.0f, sgx = 0.0f;
        if (active) {
            sxx = x_tail * x_tail;
            sgx = g_tail * w_tail * x_tail;
            held_row_sums<T, U, W>(xv, gv, wv, sxx, sgx);
        }
        const float2 s = row_sum2<TPR / 32, CLUSTER>(sxx, sgx, &red[parity][slot]);
        parity ^= 1;
        if (!active) continue;
        const float rstd = rsqrtf(s.x * a.inv_hidden + a.eps);
        const float kx = rstd * rstd * rstd * (s.y * a.inv_hidden);
        T* dr = dx + row * a.dx_stride;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = (u * CLUSTER + rank) * TPR + t;
            if (i >= nvec) continue;
            keep_packed<T, W>(xv[u]);
            keep_packed<T, W>(gv[u]);
            keep_packed<T, W>(wv[u]);
            store_words<W>(dr + static_cast<long long>(i) * V, dx_and_dw<T, W>(xv[u], gv[u], wv[u], rstd, kx, acc[u]));
        }
        if (has_tail) {
            dr[tail_start + t] = from_float<T>(dx_value(g_tail, w_tail, x_tail, rstd, kx));
            acc_tail = dw_term(g_tail, x_tail, rstd, acc_tail);
        }
    }
    const DwOut o = make_out();
    if (o.node != nullptr) {  // uniform over the block
        node_sum<TPR, V, U, RPB, CLUSTER>(acc, acc_tail, has_tail, tail_start, nvec, t, g, rank, o);
        return;
    }
    if (!p_active) return;
    // The partial (or dw itself when it is the root): 16-byte aligned, so V floats go out as float4 / float2 / float.
    float* leaf = o.leaf;
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int i = (u * CLUSTER + rank) * TPR + t;
        if (i >= nvec) continue;
        store_floats<V>(leaf + static_cast<long long>(i) * V, acc[u]);
    }
    if (has_tail) leaf[tail_start + t] = acc_tail;
}

// The scalar path (misaligned data, 2-byte VEC, or a row longer than one pass): element-wise, two sweeps per row over
// this rank's chunks (CHUNK = TPR * VEC columns, chunk j owned by rank j % CLUSTER, VEC elements per thread each);
// the partial accumulates in its scratch row (or in dw when P == 1), each element read and written by the one thread
// that owns it. Same terms in the same order as the vector path.
template <typename T, int TPR, int VEC, int CLUSTER>
__device__ __forceinline__ void partial_scalar(T* __restrict__ dx, const T* __restrict__ x, const T* __restrict__ dy,
                                               const T* __restrict__ w, float* leaf, const Rows& a, int p, int P,
                                               bool p_active, int steps, int t, float2 (*red)[32], int slot,
                                               int& parity) {
    constexpr int CHUNK = TPR * VEC;
    const int hidden = a.hidden;
#pragma unroll 1
    for (int k = 0; k < steps; ++k) {
        const long long row = p + static_cast<long long>(k) * P;
        const bool active = p_active && row < a.rows;
        const T* xr = x + (active ? row * a.x_stride : 0);
        const T* gr = dy + (active ? row * a.dy_stride : 0);
        float sxx = 0.0f, sgx = 0.0f;
        if (active) {
            for (int base = a.rank * CHUNK; base < hidden; base += CLUSTER * CHUNK) {
#pragma unroll
                for (int e = 0; e < VEC; ++e) {
                    const int i = base + e * TPR + t;
                    if (i < hidden) {
                        const float fx = to_float(xr[i]);
                        sxx = fmaf(fx, fx, sxx);
                        sgx = fmaf(to_float(gr[i]) * to_float(w[i]), fx, sgx);
                    }
                }
            }
        }
        const float2 s = row_sum2<TPR / 32, CLUSTER>(sxx, sgx, &red[parity][slot]);
        parity ^= 1;
        if (!active) continue;
        const float rstd = rsqrtf(s.x * a.inv_hidden + a.eps);
        const float kx = rstd * rstd * rstd * (s.y * a.inv_hidden);
        T* dr = dx + row * a.dx_stride;
        for (int base = a.rank * CHUNK; base < hidden; base += CLUSTER * CHUNK) {
#pragma unroll
            for (int e = 0; e < VEC; ++e) {
                const int i = base + e * TPR + t;
                if (i < hidden) {
                    const float fx = to_float(xr[i]), fg = to_float(gr[i]);
                    dr[i] = from_float<T>(dx_value(fg, to_float(w[i]), fx, rstd, kx));
                    leaf[i] = dw_term(fg, fx, rstd, k == 0 ? 0.0f : leaf[i]);
                }
            }
        }
    }
}

// ---- the whole-problem path (ROWS_IN_FLIGHT = WHOLE_ROWS) ----------------------------------------------------------
//
// One cluster owns every row (M <= 64, so P = M and every partial is one row): block `rank` holds its columns (the
// same chunks as above) of WHOLE_ROWS rows at a time, all loads issued at once, one row-sum exchange per batch of rows,
// and dw summed in registers along the tree of the layout file: no scratch, no fences, no arrivals.

inline constexpr int WHOLE_ROWS = 16;  // rows per batch: 2 * 16 row sums = one per lane of a warp

// c ? a : b on values already in registers: as C, the compiler turns a select of two array elements into a load from
// a selected address, which puts the array in local memory.
__device__ __forceinline__ float select_value(bool c, float a, float b) {
    float r;
    asm("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %3, 0;\n\tselp.f32 %0, %1, %2, p;\n\t}"
        : "=f"(r)
        : "f"(a), "f"(b), "r"(static_cast<unsigned>(c)));
    return r;
}

// One step of warp_transpose_sum32 (HALF = 16, 8, .., 1, a template so that every index is a constant): lane keeps
// v[i + HALF] (its HALF bit set) or v[i] in v[i], plus the partner lane's copy of the same value.
template <int HALF, int N>
__device__ __forceinline__ void transpose_step(float (&v)[N], int lane) {
    const bool hi = (lane & HALF) != 0;
#pragma unroll
    for (int i = 0; i < HALF; ++i) {
        const float send = select_value(hi, v[i], v[i + HALF]);
        const float keep = select_value(hi, v[i + HALF], v[i]);
        v[i] = keep + __shfl_xor_sync(0xffffffffu, send, HALF);
    }
    if constexpr (HALF > 1) transpose_step<HALF / 2>(v, lane);
}

// Sums 32 values over the warp's 32 lanes with 31 shuffles (instead of 5 per value): each step keeps half of the
// values, the half picked by the lane's bit, and adds the partner's copy of it. Returns, in lane l, the warp's sum of
// v[l] (the order of its additions depends on l only: the same in every warp).
__device__ __forceinline__ float warp_transpose_sum32(float (&v)[32]) {
    transpose_step<16>(v, threadIdx.x & 31);
    return v[0];
}

// The rows r = base .. base + 15 of a batch add to the tree (fan-in 8 over one-row partials, P = rows <= 64): s1 is the
// level-1 node being summed (its first child, then += the next ones in order), s2 the root being summed from the
// level-1 nodes. With rows <= 8 the only level-1 node is the root: s2 = s1 then. __fadd_rn: never contracted with the
// term's multiply, so every addition is the tree's (the same values as sum_children and node_sum add).
__device__ __forceinline__ void whole_tree_add(float t, int k, bool node_done, bool first_node, float& s1, float& s2) {
    s1 = k % 8 == 0 ? t : __fadd_rn(s1, t);
    if (node_done) s2 = first_node ? s1 : __fadd_rn(s2, s1);
}

// Every thread of the cluster (grid: one cluster; rows <= 64, hidden % V == 0, the vector path's alignment). red_w:
// 2 x WARPS x 32 floats, red_c: 2 x 32 floats (shared; double-buffered by batch as in cluster_sum2).
template <typename T, int TPR, int V, int U, int CLUSTER>
__device__ __forceinline__ void whole_vector(T* __restrict__ dx, float* __restrict__ dw, const T* __restrict__ x,
                                             const T* __restrict__ dy, const T* __restrict__ w, const Rows& a,
                                             float (*red_w)[TPR], float (*red_c)[32]) {
    constexpr int W = V * int(sizeof(T)) / 4;
    constexpr int E = elems_per_word<T>;
    constexpr int K = WHOLE_ROWS;
    constexpr int WARPS = TPR / 32;
    static_assert(W >= 1 && W * 4 == V * int(sizeof(T)), "rmsnorm_bwd whole path: accesses of 4, 8 or 16 bytes");
    static_assert(2 * K == 32, "rmsnorm_bwd whole path: two row sums per row, one per lane");
    const int t = threadIdx.x;
    const int lane = t & 31;
    const int warp = t >> 5;
    const int rank = a.rank;
    const int nvec = a.hidden / V;

    Words<W> wv[U];
    float s1[U][V], s2[U][V];
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int i = (u * CLUSTER + rank) * TPR + t;
        wv[u] = i < nvec ? load_words<W>(w + static_cast<long long>(i) * V) : zero_words<W>();
#pragma unroll
        for (int e = 0; e < V; ++e) s1[u][e] = s2[u][e] = 0.0f;
    }
    int parity = 0;
#pragma unroll 1
    for (int base = 0; base < a.rows; base += K) {
        // Every load of the batch in flight at once (rows past the end read nothing and add nothing).
        Words<W> xv[K][U], gv[K][U];
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const long long r = base + k;
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int i = (u * CLUSTER + rank) * TPR + t;
                const bool ok = r < a.rows && i < nvec;
                xv[k][u] = ok ? load_words<W>(x + r * a.x_stride + static_cast<long long>(i) * V) : zero_words<W>();
                gv[k][u] = ok ? load_words<W>(dy + r * a.dy_stride + static_cast<long long>(i) * V) : zero_words<W>();
            }
        }
        float v[2 * K] = {};  // v[k]: this thread's sum of x^2 over row k, v[K + k]: of dy * w * x
#pragma unroll
        for (int k = 0; k < K; ++k) held_row_sums<T, U, W>(xv[k], gv[k], wv, v[k], v[K + k]);
        // Lane l: the warp's v[l]; then the block's (warps in order), then the cluster's (ranks in order): the same
        // additions in every block, so every block gets the same sums.
        red_w[parity][warp * 32 + lane] = warp_transpose_sum32(v);
        __syncthreads();
        float s;
        if constexpr (CLUSTER == 1) {
            s = 0.0f;
#pragma unroll
            for (int q = 0; q < WARPS; ++q) s += red_w[parity][q * 32 + lane];
        } else {
            if (warp == 0) {
                float b = 0.0f;
#pragma unroll
                for (int q = 0; q < WARPS; ++q) b += red_w[parity][q * 32 + lane];
                red_c[parity][lane] = b;
            }
            __cluster_barrier_arrive();  // release
            __cluster_barrier_wait();    // acquire
            s = 0.0f;
#pragma unroll
            for (int q = 0; q < CLUSTER; ++q)
                s += *static_cast<const float*>(__cluster_map_shared_rank(&red_c[parity][lane], q));
        }
        parity ^= 1;
#pragma unroll
        for (int u = 0; u < U; ++u) keep_packed<T, W>(wv[u]);
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const float sxx = __shfl_sync(0xffffffffu, s, k);
            const float sgx = __shfl_sync(0xffffffffu, s, K + k);
            const int r = base + k;
            if (r >= a.rows) break;  // uniform
            const float rstd = rsqrtf(sxx * a.inv_hidden + a.eps);
            const float kx = rstd * rstd * rstd * (sgx * a.inv_hidden);
            const bool node_done = k % 8 == 7 || r == a.rows - 1;
            const bool first_node = r < 8;
            T* dr = dx + static_cast<long long>(r) * a.dx_stride;
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int i = (u * CLUSTER + rank) * TPR + t;
                if (i >= nvec) continue;
                keep_packed<T, W>(xv[k][u]);
                keep_packed<T, W>(gv[k][u]);
                Words<W> out;
#pragma unroll
                for (int j = 0; j < W; ++j) {
                    float fx[E], fg[E], fw[E], fd[E];
                    unpack_word(T{}, xv[k][u].w[j], fx);
                    unpack_word(T{}, gv[k][u].w[j], fg);
                    unpack_word(T{}, wv[u].w[j], fw);
#pragma unroll
                    for (int e = 0; e < E; ++e) {
                        fd[e] = dx_value(fg[e], fw[e], fx[e], rstd, kx);
                        whole_tree_add(dw_term(fg[e], fx[e], rstd, 0.0f), k, node_done, first_node,
                                       s1[u][j * E + e], s2[u][j * E + e]);
                    }
                    out.w[j] = pack_word<T>(fd);
                }
                store_words<W>(dr + static_cast<long long>(i) * V, out);
            }
        }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int i = (u * CLUSTER + rank) * TPR + t;
        if (i >= nvec) continue;
        store_floats<V>(dw + static_cast<long long>(i) * V, s2[u]);
    }
}

// ---- the node path (ROWS_IN_FLIGHT = NODE_ROWS) ----------------------------------------------------------------------
//
// Small M in one cluster (rows <= 8 * ROWS_PER_BLOCK <= 64, so P = rows and every partial is one row): the block's
// thread group g (TPR threads) owns the rows of level-1 node g of the dw tree (rows 8g .. 8g + 7), each block its
// chunks of columns (as above). A thread holds its columns of at most 8 rows (8 * VEC * UNROLL elements; the whole
// path: 16 rows per thread, so a quarter of the warps for the same work at M = 16, each with twice the dependent
// instructions: measured 5.5-7 us). Latency, not bytes, sets the time at these sizes, so: every load is issued first
// (below); one block barrier and (CLUSTER > 1) one exchange of the row sums, each block pushing its sums into every
// block's shared memory with asynchronous stores that complete on the receiver's mbarrier
// (kernels/common/ktune_cluster.cuh: no cluster barrier with its GPU-scope fence; nothing remote is read, so no block
// waits for the others to finish before it leaves); the node is summed in registers and, with rows > 8, the root from
// the nodes by group 0 through shared memory (one more block barrier). No scratch, fences or arrivals.
//
// Loads first (node_load): the kernel's first code computes this thread's addresses and issues all its loads of x,
// dy and w, then checks the launch (alignment, strides, one pass, rows, grid) while they fly, then sets up the
// exchange. Before, the checks, the path choice, 1 / hidden and the mbarrier came first, behind two jumps (the node
// code lies ~24 KiB into the kernel, cold after an L2 flush): the first load was the ~95th-106th instruction executed
// and the last of the 17 (UNROLL 1, M = 16) the ~176th-195th; now the loads are the 53rd-62nd to the 103rd-110th, all
// before any jump (sm_90 SASS of the M = 16 best configurations). A thread loads only whole accesses inside rows
// below `rows` and only when x, dy, w and their row strides are aligned to the access, so nothing can fault whatever
// the launch; if the checks then fail, the loads are dropped and the other paths run. No zeros are written ahead of
// the loads (they would come before the first one): node_vector reads only the accesses it loaded. On the H100, same
// call, against the kernel before: the node configurations at M = 1 -0.2 to -1.2 % (best kernel time -4 to -7 % at
// H >= 4096), at M = 16 unchanged (-0.1 %): there the time is not the code before the first load.

inline constexpr int NODE_ROWS = DW_TREE_FAN;  // rows per thread: one level-1 node of the tree

// Sums 16 values over the warp's lanes with 15 + 1 shuffles: lane l gets the warp's sum of v[l % 16].
__device__ __forceinline__ float warp_transpose_sum16(float (&v)[16]) {
    transpose_step<8>(v, threadIdx.x & 31);
    return v[0] + __shfl_xor_sync(0xffffffffu, v[0], 16);
}

// The node path's loads, issued first thing in the kernel (before its launch checks, see node_vector): this thread's
// accesses of w and of rows r0 .. r0 + 7 of x and dy (r0 = 8 * its group), as node_vector holds them: wv[u], xv[k][u]
// and gv[k][u] hold access i = (u * CLUSTER + rank) * TPR + t of w and of row r0 + k where i < hidden / V and
// r0 + k < rows (nothing defined elsewhere). Nothing can fault whatever the launch: a thread loads only whole accesses
// inside rows below `rows` (w only when rows >= 1), only when x, dy, w and the x and dy row strides are aligned to the
// access, and only in the first cluster (the node path's grid; further clusters load nothing). rank =
// blockIdx.x % CLUSTER, a 1-D cluster's rank (grid.x a multiple of CLUSTER), with no special register to wait on.
template <typename T, int TPR, int V, int U, int CLUSTER, int W>
__device__ __forceinline__ void node_load(const T* __restrict__ x, const T* __restrict__ dy, const T* __restrict__ w,
                                          int rows, int hidden, long long x_stride, long long dy_stride,
                                          Words<W> (&wv)[U], Words<W> (&xv)[DW_TREE_FAN][U],
                                          Words<W> (&gv)[DW_TREE_FAN][U]) {
    constexpr int K = DW_TREE_FAN;
    constexpr unsigned BYTES = V * sizeof(T);
    // Unsigned: shifts and masks, no sign fix-ups on the way to the first load.
    const unsigned tid = threadIdx.x;
    const unsigned g = tid / TPR;
    const unsigned i0 = (blockIdx.x % CLUSTER) * TPR + tid % TPR;  // access u: i0 + u * CLUSTER * TPR
    const unsigned r0 = g * K;
    const int nvec = hidden >> log2_of(V);  // hidden / V for hidden >= 0; negative (no loads) otherwise
    // Bitwise &: no branches.
    const bool go = (blockIdx.x < static_cast<unsigned>(CLUSTER)) & all_aligned(BYTES, x, dy, w) &
                    (((x_stride | dy_stride) & (V - 1)) == 0);
    const T* xr = opaque(x + r0 * x_stride) + static_cast<unsigned long long>(i0) * V;
    const T* gr = opaque(dy + r0 * dy_stride) + static_cast<unsigned long long>(i0) * V;
    const T* wr = w + static_cast<unsigned long long>(i0) * V;
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const bool in_row = go & (static_cast<int>(i0 + u * CLUSTER * TPR) < nvec);
        constexpr long long STEP = static_cast<long long>(CLUSTER) * TPR * V;
        load_words_if<W>(wv[u], wr + u * STEP, in_row & (rows >= 1));
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const bool ok = in_row & (static_cast<int>(r0) + k < rows);
            load_words_if<W>(xv[k][u], xr + k * x_stride + u * STEP, ok);
            load_words_if<W>(gv[k][u], gr + k * dy_stride + u * STEP, ok);
        }
    }
}

// Every thread of the cluster (grid: one cluster; rows <= 8 * G, hidden % V == 0, the vector path's alignment, one
// pass), with this thread's accesses already in wv, xv and gv (node_load). red_w: BLOCK / 32 x 16 floats, red_c:
// CLUSTER x G x 16 floats, stage: (G - 1) x U x TPR x V floats (16-byte aligned; G > 1), bar: the exchange's mbarrier,
// all shared.
template <typename T, int TPR, int V, int U, int G, int CLUSTER, int W>
__device__ __forceinline__ void node_vector(T* __restrict__ dx, float* __restrict__ dw, const Rows& a,
                                            const Words<W> (&wv)[U], const Words<W> (&xv)[DW_TREE_FAN][U],
                                            const Words<W> (&gv)[DW_TREE_FAN][U], float (*red_w)[2 * NODE_ROWS],
                                            float (*red_c)[G][2 * NODE_ROWS], float* stage, unsigned long long* bar) {
    constexpr int E = elems_per_word<T>;
    constexpr int K = NODE_ROWS;
    constexpr int WPG = TPR / 32;  // warps per group
    static_assert(W >= 1 && W * 4 == V * int(sizeof(T)), "rmsnorm_bwd node path: accesses of 4, 8 or 16 bytes");
    static_assert(2 * K == 16, "rmsnorm_bwd node path: 16 row sums per group");
    // The exchange's mbarrier, then the arrival of the cluster barrier whose wait comes before the pushes: a block
    // pushes into another only once that block has started and initialised its mbarrier.
    if constexpr (CLUSTER > 1) {
        if (threadIdx.x == 0) mbarrier_init(bar);
        asm volatile("barrier.cluster.arrive.relaxed;" ::: "memory");
    }
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int g = tid / TPR;
    const int t = tid - g * TPR;
    const int rank = a.rank;
    const int nvec = a.hidden / V;
    const int r0 = g * K;
    const int n = a.rows - r0 < K ? a.rows - r0 : K;  // the node's rows (<= 0: none; uniform over the warp)

    // v[k]: this thread's sum of x^2 over row r0 + k, v[K + k]: of dy * w * x.
    float v[2 * K];
#pragma unroll
    for (int k = 0; k < 2 * K; ++k) v[k] = 0.0f;
    // Only the accesses node_load loaded (i < nvec; the others hold no zeros): skipping an access adds what its
    // zeros would (+0 stays +0), so the sums are held_row_sums' bits.
#pragma unroll
    for (int k = 0; k < K; ++k) {
        if (k >= n) break;
#pragma unroll
        for (int u = 0; u < U; ++u)
            if ((u * CLUSTER + rank) * TPR + t < nvec)
                held_access_sums<T, W>(xv[k][u], gv[k][u], wv[u], v[k], v[K + k]);
    }
    // Lane l (< 16): the warp's sum of v[l]; then the block's (its group's warps in order), then the cluster's (ranks
    // in order): the same additions in every block, so every block gets the same sums.
    const float sw = warp_transpose_sum16(v);
    if (lane < 2 * K) red_w[warp][lane] = sw;
    __syncthreads();
    float s = 0.0f;
    if constexpr (CLUSTER == 1) {
#pragma unroll
        for (int q = 0; q < WPG; ++q) s += red_w[g * WPG + q][lane & 15];
    } else {
        asm volatile("barrier.cluster.wait;" ::: "memory");  // every block has started
        if (tid == 0) mbarrier_expect_bytes(bar, static_cast<unsigned>(sizeof(float) * CLUSTER * G * 2 * K));
        if (warp < G && lane < 2 * K) {  // warp gg pushes group gg's block sums to every block
            float b = 0.0f;
#pragma unroll
            for (int q = 0; q < WPG; ++q) b += red_w[warp * WPG + q][lane];
            const unsigned mine = shared_address(&red_c[rank][warp][lane]);
#pragma unroll
            for (int q = 0; q < CLUSTER; ++q) cluster_push(mine, b, bar, q);
        }
        mbarrier_wait<true>(bar, 0);  // every block's sums are here
#pragma unroll
        for (int q = 0; q < CLUSTER; ++q) s += red_c[q][g][lane & 15];
    }
    // Row r0 + k: its sums in lanes k and K + k.
    float acc[U][V];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        if (k >= n) break;
        const float sxx = __shfl_sync(0xffffffffu, s, k);
        const float sgx = __shfl_sync(0xffffffffu, s, K + k);
        const float rstd = rsqrtf(sxx * a.inv_hidden + a.eps);
        const float kx = rstd * rstd * rstd * (sgx * a.inv_hidden);
        T* dr = dx + static_cast<long long>(r0 + k) * a.dx_stride;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = (u * CLUSTER + rank) * TPR + t;
            if (i >= nvec) continue;
            Words<W> out;
#pragma unroll
            for (int j = 0; j < W; ++j) {
                float fx[E], fg[E], fw[E], fd[E];
                unpack_word(T{}, xv[k][u].w[j], fx);
                unpack_word(T{}, gv[k][u].w[j], fg);
                unpack_word(T{}, wv[u].w[j], fw);
#pragma unroll
                for (int e = 0; e < E; ++e) {
                    fd[e] = dx_value(fg[e], fw[e], fx[e], rstd, kx);
                    // The node: its first row's term, then += the next ones in row order (as whole_tree_add).
                    const float term = dw_term(fg[e], fx[e], rstd, 0.0f);
                    acc[u][j * E + e] = k == 0 ? term : __fadd_rn(acc[u][j * E + e], term);
                }
                out.w[j] = pack_word<T>(fd);
            }
            store_words<W>(dr + i * V, out);
        }
    }
    // dw: the node itself when rows <= 8; else group 0 adds the nodes in order (the root).
    const int nodes = (a.rows + K - 1) / K;  // uniform over the block
    if constexpr (G > 1) {
        if (nodes > 1) {
            if (g > 0 && n > 0) {
#pragma unroll
                for (int u = 0; u < U; ++u)
                    store_floats<V>(stage + ((static_cast<long long>(g - 1) * U + u) * TPR + t) * V, acc[u]);
            }
            __syncthreads();
            if (g != 0) return;
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int i = (u * CLUSTER + rank) * TPR + t;
                if (i >= nvec) continue;
                float root[V];
#pragma unroll
                for (int e = 0; e < V; ++e) root[e] = acc[u][e];
#pragma unroll
                for (int h = 1; h < G; ++h)
                    if (h < nodes) {
                        const float* st = stage + ((static_cast<long long>(h - 1) * U + u) * TPR + t) * V;
#pragma unroll
                        for (int e = 0; e < V; ++e) root[e] = __fadd_rn(root[e], st[e]);
                    }
                store_floats<V>(dw + i * V, root);
            }
            return;
        }
    }
    if (g != 0) return;
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int i = (u * CLUSTER + rank) * TPR + t;
        if (i >= nvec) continue;
        store_floats<V>(dw + i * V, acc[u]);
    }
}

// ---- one row -------------------------------------------------------------------------------------------------------
//
// The one-row path: rows == 1 on one block (CLUSTER 1, ROWS_PER_BLOCK 1, ROWS_IN_FLIGHT 1 or 2). dw is the row's own
// dy * x * rstd (P = 1: no tree, no scratch). Its loads go out after the address arithmetic alone, as short as
// torch.compile's kernel: a thread loads only whole accesses inside the row, and only aligned ones, so nothing can
// fault whatever the arguments, and the launch-wide conditions (one row, every pointer aligned, hidden a multiple of V
// within one pass) are checked while the loads fly. If they fail, nothing has been written and no barrier passed:
// it returns false and the kernel goes on to its general paths. Same terms as partial_vector (rstd, dx, dw).
template <typename T, int BLOCK, int V, int U>
__device__ __forceinline__ bool one_row(T* __restrict__ dx, float* __restrict__ dw, const T* __restrict__ x,
                                        const T* __restrict__ dy, const T* __restrict__ w, int rows, int hidden,
                                        float eps, float2* red) {
    constexpr int W = V * int(sizeof(T)) / 4;
    constexpr unsigned BYTES = V * sizeof(T);
    static_assert(W >= 1 && W * 4 == V * int(sizeof(T)), "rmsnorm_bwd one-row path: accesses of 4, 8 or 16 bytes");
    const int t = threadIdx.x;
    Words<W> xv[U], gv[U], wv[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int c = (u * BLOCK + t) * V;
        // rows == 1 first (uniform): other launches load nothing here, and a row is there to read.
        const bool ok = (rows == 1) & (c + V <= hidden) & all_aligned(BYTES, x + c, dy + c, w + c);
        xv[u] = ok ? load_words<W>(x + c) : zero_words<W>();
        gv[u] = ok ? load_words<W>(dy + c) : zero_words<W>();
        wv[u] = ok ? load_words<W>(w + c) : zero_words<W>();
    }
    // Uniform over the grid (bitwise &: no short-circuit branches).
    const bool fast = (rows == 1) & (hidden % V == 0) & (hidden <= BLOCK * V * U) &
                      all_aligned(BYTES, x, dy, dx, w) & all_aligned(16, dw);
    if (!fast) return false;
    if (blockIdx.x != 0) return true;  // a grid of more blocks: the first does it all
    float sxx = 0.0f, sgx = 0.0f;
    held_row_sums<T, U, W>(xv, gv, wv, sxx, sgx);
    const float2 s = group_sum2<BLOCK / 32>(sxx, sgx, red);
    const float inv_hidden = 1.0f / static_cast<float>(hidden);
    const float rstd = rsqrtf(s.x * inv_hidden + eps);
    const float kx = rstd * rstd * rstd * (s.y * inv_hidden);
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int c = (u * BLOCK + t) * V;
        if (c >= hidden) continue;
        float acc[V] = {};
        store_words<W>(dx + c, dx_and_dw<T, W>(xv[u], gv[u], wv[u], rstd, kx, acc));
        store_floats<V>(dw + c, acc);
    }
    return true;
}

}  // namespace ktune::dev::rmsnorm_bwd

template <typename T, int BLOCK, int VEC, int UNROLL, int ROWS_PER_BLOCK, int ROWS_IN_FLIGHT, int CLUSTER>
// The node path's configurations ask for one block per SM (minBlocks 1; 0 is the default, identical code): without it
// ptxas caps them at 64 registers and spills (e.g. bf16 BLOCK 256, ROWS_PER_BLOCK 2: 88 registers with it, none spilled).
__global__ void __cluster_dims__(CLUSTER, 1, 1)
    __launch_bounds__(BLOCK, ROWS_IN_FLIGHT == ktune::dev::rmsnorm_bwd::NODE_ROWS ? 1 : 0)
    rmsnorm_bwd(T* __restrict__ dx, float* __restrict__ dw, float* __restrict__ scratch, const T* __restrict__ x,
                const T* __restrict__ dy, const T* __restrict__ w, int rows, int hidden, long long x_row_stride,
                long long dy_row_stride, long long dx_row_stride, float eps) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 2, "rmsnorm_bwd: T is float, __half or __nv_bfloat16");
    static_assert(ROWS_PER_BLOCK >= 1 && 8 % ROWS_PER_BLOCK == 0, "rmsnorm_bwd: ROWS_PER_BLOCK divides 8");
    static_assert(BLOCK >= 32 && BLOCK <= 1024, "rmsnorm_bwd: BLOCK in [32, 1024]");
    static_assert(BLOCK % (32 * ROWS_PER_BLOCK) == 0, "rmsnorm_bwd: BLOCK % (32 * ROWS_PER_BLOCK) == 0");
    static_assert(VEC >= 1 && (VEC & (VEC - 1)) == 0, "rmsnorm_bwd: VEC is a power of two");
    static_assert(VEC * sizeof(T) <= 16, "rmsnorm_bwd: VEC * sizeof(T) <= 16");
    static_assert(UNROLL >= 1 && UNROLL <= 32, "rmsnorm_bwd: UNROLL in [1, 32]");
    static_assert(ROWS_IN_FLIGHT == 1 || ROWS_IN_FLIGHT == 2 || ROWS_IN_FLIGHT == ktune::dev::rmsnorm_bwd::NODE_ROWS ||
                      ROWS_IN_FLIGHT == ktune::dev::rmsnorm_bwd::WHOLE_ROWS,
                  "rmsnorm_bwd: ROWS_IN_FLIGHT is 1, 2, 8 or 16");
    static_assert(ROWS_IN_FLIGHT != ktune::dev::rmsnorm_bwd::WHOLE_ROWS || ROWS_PER_BLOCK == 1,
                  "rmsnorm_bwd: the whole-problem path has one group");
    static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4 || CLUSTER == 8 || CLUSTER == 16,
                  "rmsnorm_bwd: CLUSTER in {1, 2, 4, 8, 16}");
    static_assert(ktune::rmsnorm_bwd_layout::DW_TREE_FAN % ROWS_PER_BLOCK == 0,
                  "rmsnorm_bwd: a block's partials share a node");

    using namespace ktune::dev;
    using namespace ktune::dev::rmsnorm_bwd;
    constexpr int TPR = BLOCK / ROWS_PER_BLOCK;
    constexpr int CHUNK = TPR * VEC;  // columns per ownership chunk
    constexpr unsigned VEC_BYTES = VEC * sizeof(T);
    constexpr bool VECTOR_PATH = VEC_BYTES >= 4;
    constexpr bool WHOLE = ROWS_IN_FLIGHT == WHOLE_ROWS && VECTOR_PATH;
    constexpr bool NODE = ROWS_IN_FLIGHT == NODE_ROWS && VECTOR_PATH;
    __shared__ float2 red[2][32];  // per warp of a group, double-buffered (see group_sum2 / cluster_sum2)
    __shared__ int s_last;
    // Node mode's partials (node_sum); the node path's nodes (all UNROLL accesses at once).
    __shared__ __align__(16) float stage[ROWS_PER_BLOCK > 1 && VECTOR_PATH
                                             ? (ROWS_PER_BLOCK - 1) * TPR * VEC * (NODE ? UNROLL : 1)
                                             : 4];
    __shared__ float node_w[NODE ? BLOCK / 32 : 1][2 * NODE_ROWS];  // node path: per warp, per lane
    __shared__ float node_c[NODE ? CLUSTER : 1][NODE ? ROWS_PER_BLOCK : 1][2 * NODE_ROWS];  // per rank, group, lane
    __shared__ __align__(8) unsigned long long node_bar;  // node path: the row sums' exchange

    // One row on one block (the latency of M = 1): the one-row path, before any other set-up.
    if constexpr (CLUSTER == 1 && ROWS_PER_BLOCK == 1 && ROWS_IN_FLIGHT <= 2 && VECTOR_PATH) {
        if (one_row<T, BLOCK, VEC, UNROLL>(dx, dw, x, dy, w, rows, hidden, eps, red[0])) return;
    }
    // The node path first, ahead of the other paths' set-up: its loads go out before any check (node_load: they
    // cannot fault), and the launch checks run while they fly. Uniform over the grid.
    if constexpr (NODE) {
        constexpr int W = VEC_BYTES / 4;
        Words<W> wv[UNROLL], xv[NODE_ROWS][UNROLL], gv[NODE_ROWS][UNROLL];
        node_load<T, TPR, VEC, UNROLL, CLUSTER>(x, dy, w, rows, hidden, x_row_stride, dy_row_stride, wv, xv, gv);
        // Bitwise &: no short-circuit branches.
        const bool node_ok = all_aligned(VEC_BYTES, x, dy, dx, w) & all_aligned(16, dw) &
                             (((x_row_stride | dy_row_stride | dx_row_stride) & (VEC - 1)) == 0) &
                             (hidden % VEC == 0) & (hidden / VEC <= CLUSTER * TPR * UNROLL) & (rows >= 1) &
                             (rows <= NODE_ROWS * ROWS_PER_BLOCK);
        if (node_ok) {  // else the early loads are dropped
            if (static_cast<int>(blockIdx.x) >= CLUSTER) return;  // grid: one cluster (any further ones idle)
            // The rank as node_load took it (for a 1-D cluster, the same as %cluster_ctarank).
            const Rows a{x_row_stride, dy_row_stride, dx_row_stride, rows, hidden, 1.0f / static_cast<float>(hidden),
                         eps, static_cast<int>(blockIdx.x % CLUSTER)};
            node_vector<T, TPR, VEC, UNROLL, ROWS_PER_BLOCK, CLUSTER>(dx, dw, a, wv, xv, gv, node_w, node_c, stage,
                                                                      &node_bar);
            return;
        }
    }
    __shared__ float whole_w[WHOLE ? 2 : 1][WHOLE ? TPR : 1];  // whole path: per warp, per lane; two batches
    __shared__ float whole_c[WHOLE ? 2 : 1][WHOLE ? 32 : 1];  // whole path: the block's sums

    const Tree tree{scratch + DW_COUNTER_WORDS, reinterpret_cast<unsigned*>(scratch), dw, hidden,
                    dw_row_stride(hidden)};
    const int P = dw_partials(rows, hidden);
    const int rank = cluster_rank<CLUSTER>();
    const Rows a{x_row_stride, dy_row_stride, dx_row_stride, rows, hidden, 1.0f / static_cast<float>(hidden), eps,
                 rank};
    const int row_in_block = threadIdx.x / TPR;
    const int t = threadIdx.x % TPR;
    const int slot = row_in_block * (TPR / 32);
    const int cluster = static_cast<int>(blockIdx.x) / CLUSTER;
    const int clusters = static_cast<int>(gridDim.x) / CLUSTER;

    // Uniform over the grid, so every barrier is reached by all threads of a block (and of a cluster).
    const bool vector_ok = VECTOR_PATH && is_aligned(x, VEC_BYTES) && is_aligned(dy, VEC_BYTES) &&
                           is_aligned(dx, VEC_BYTES) && is_aligned(w, VEC_BYTES) && is_aligned(dw, 16) &&
                           is_aligned(scratch, 16) && x_row_stride % VEC == 0 && dy_row_stride % VEC == 0 &&
                           dx_row_stride % VEC == 0 && hidden / VEC <= CLUSTER * TPR * UNROLL;

    // The whole-problem path: rows <= 64 gives P = rows (dw_partials >= min(rows, 128)), one row per partial.
    if constexpr (WHOLE) {
        if (vector_ok && rows <= 64 && hidden % VEC == 0) {
            if (cluster != 0) return;  // grid: one cluster (any further ones have nothing to do)
            whole_vector<T, TPR, VEC, UNROLL, CLUSTER>(dx, dw, x, dy, w, a, whole_w, whole_c);
            // No block leaves while another block of its cluster may still read its shared memory.
            if constexpr (CLUSTER > 1) {
                __cluster_barrier_arrive();
                __cluster_barrier_wait();
            }
            return;
        }
    }

    int parity = 0;  // red's buffer: alternates over every row sum of the launch
#pragma unroll 1
    for (int group = cluster; group * ROWS_PER_BLOCK < P; group += clusters) {
        const int first = group * ROWS_PER_BLOCK;
        const int p = first + row_in_block;
        const bool p_active = p < P;
        // Rows of the group's first partial (the most of any); one each when every row is a partial (no division).
        const int steps = P == rows ? 1 : (rows - first + P - 1) / P;
        float* leaf = P == 1 ? dw : tree.rows + (p_active ? p : first) * tree.stride;  // a single partial is dw
        if constexpr (VECTOR_PATH) {
            if (vector_ok) {
                // Where the partial goes, worked out after the rows (its arithmetic would delay the first loads).
                const auto out = [&] {
                    const int count = P - first < ROWS_PER_BLOCK ? P - first : ROWS_PER_BLOCK;
                    const int parent = first / DW_TREE_FAN;
                    const int children =
                        P - parent * DW_TREE_FAN < DW_TREE_FAN ? P - parent * DW_TREE_FAN : DW_TREE_FAN;
                    const bool node_mode = first % DW_TREE_FAN == 0 && count == children;
                    float* node = !node_mode ? nullptr
                                  : P <= DW_TREE_FAN ? dw
                                                     : tree.rows + (static_cast<long long>(P) + parent) * tree.stride;
                    return DwOut{leaf, node, count, stage};
                };
                partial_vector<T, TPR, VEC, UNROLL, ROWS_IN_FLIGHT == 2, ROWS_PER_BLOCK, CLUSTER>(
                    dx, x, dy, w, out, a, p, P, p_active, steps, t, row_in_block, red, slot, parity);
            } else {
                partial_scalar<T, TPR, VEC, CLUSTER>(dx, x, dy, w, leaf, a, p, P, p_active, steps, t, red, slot,
                                                     parity);
            }
        } else {
            partial_scalar<T, TPR, VEC, CLUSTER>(dx, x, dy, w, leaf, a, p, P, p_active, steps, t, red, slot, parity);
        }
    }
    // No block leaves (or reuses red) while another block of its cluster may still read its shared memory.
    if constexpr (CLUSTER > 1) {
        __cluster_barrier_arrive();
        __cluster_barrier_wait();
    }
    // Arrivals after all of this block's rows: the tree code kept out of the row loop leaves its registers alone.
#pragma unroll 1
    for (int group = cluster; group * ROWS_PER_BLOCK < P; group += clusters) {
        const int first = group * ROWS_PER_BLOCK;
        const int count = P - first < ROWS_PER_BLOCK ? P - first : ROWS_PER_BLOCK;
        const int parent = first / DW_TREE_FAN;
        const int children = P - parent * DW_TREE_FAN < DW_TREE_FAN ? P - parent * DW_TREE_FAN : DW_TREE_FAN;
        const bool node_mode = VECTOR_PATH && vector_ok && first % DW_TREE_FAN == 0 && count == children;
        if (node_mode) {
            if (P > DW_TREE_FAN) tree_arrive<BLOCK, CHUNK, CLUSTER>(tree, P, 1, parent, 1, rank, &s_last);
        } else {
            tree_arrive<BLOCK, CHUNK, CLUSTER>(tree, P, 0, first, count, rank, &s_last);
        }
    }
}
