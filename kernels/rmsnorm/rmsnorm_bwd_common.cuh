#pragma once
// RMSNorm backward: what its three tuned kernels share. With rstd[r] = rsqrt(mean_c(x[r, :]^2) + eps) recomputed
// from x:
//
//   dx[r, c] = rstd[r] * dy[r, c] * w[c] - rstd[r]^3 * mean_c(dy[r, :] * w * x[r, :]) * x[r, c]
//   dw[c]    = sum_r dy[r, c] * x[r, c] * rstd[r]                                       (fp32 output, see below)
//
// (y = x * rstd * w, d rstd / d x[c] = -rstd^3 * x[c] / hidden.) for r < rows, c < hidden. All arithmetic in fp32; dx
// rounded once to T. x, dy and dx rows start their own row stride apart (elements, >= hidden); padding columns are
// never read or written. T: float, __half, __nv_bfloat16.
// The kernels, alternatives of search_spaces/rmsnorm_bwd.yaml (op rmsnorm, variant bwd), take the same arguments:
// rmsnorm_bwd_rows.cuh (groups of partials over the grid, the dw tree through scratch), rmsnorm_bwd_node.cuh and
// rmsnorm_bwd_whole.cuh (small M in one cluster, dw summed in registers); reference:
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
//
// Here: the reductions, the dw tree, the rows walk over groups of partials (walk_partials: the rows kernel, and the
// node and whole kernels' fallback where their conditions fail) with its vector and scalar paths, and the register
// tree sums the node and whole kernels share.
//
// Tunables every kernel has (template parameters, named as the YAML keys):
//   BLOCK           threads per block: a multiple of 32 * ROWS_PER_BLOCK, at most 1024.
//   VEC             elements per vector access: a power of two, VEC * sizeof(T) in {4, 8, 16} bytes for the vector
//                   path (VEC 1 for 16-bit types always takes the scalar path).
//   UNROLL          vector accesses each thread holds per row, 1..32. The vector path needs the row to fit in one
//                   pass (CLUSTER * threads_per_row * VEC * UNROLL >= hidden): x, dy, w and the thread's fp32 dw
//                   partials stay in registers. Otherwise the scalar path runs (correct, slow): the YAML keeps such
//                   configurations out.
//   ROWS_PER_BLOCK  leaf partials a block works on at once (a divisor of 8, so they share one tree node):
//                   threads_per_row = BLOCK / ROWS_PER_BLOCK, a multiple of 32 (the whole kernel: 1).
//   CLUSTER         blocks per row (thread-block cluster size, __cluster_dims__): 1, 2, 4, 8 or 16. 16 is beyond the
//                   portable size: the launcher allows it per kernel (the non-portable cluster size attribute; an H100
//                   has it), and the node kernel at M = 16 gains most from it (twice the SMs pulling the rows).
//
// Launch: block = BLOCK threads (1-D), grid.x = a multiple of CLUSTER: clusters loop over groups of ROWS_PER_BLOCK
// partials (grid stride); ceil_div(dw_partials(M, H), ROWS_PER_BLOCK) * CLUSTER gives one group per cluster (the node
// and whole kernels: CLUSTER, one cluster; further clusters idle). Static shared memory only.
// scratch: dw_scratch_floats(rows, hidden) floats, 16-byte aligned, zero-filled before first use (see the layout file).
// The vector path needs x, dy, dx, w aligned to VEC * sizeof(T) bytes, row strides that are multiples of VEC, and dw
// and scratch 16-byte aligned (checked once per launch); otherwise every row takes the scalar path.
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

// ---- the rows walk -------------------------------------------------------------------------------------------------

// No one-cluster path ahead of the rows walk (see walk_partials): not even its checks, so that the walk's code is the
// same as the rows kernel's own.
struct NoOneCluster {
    __device__ __forceinline__ void operator()(const Rows&) const {}
};
template <typename OneCluster>
inline constexpr bool has_one_cluster = true;
template <>
inline constexpr bool has_one_cluster<NoOneCluster> = false;

// Every group of ROWS_PER_BLOCK partials this block's cluster owns (grid stride), then the tree's arrivals: the rows
// kernel's walk, and the node and whole kernels' fallback. PREFETCH: a partial's next row is loaded before the current
// one is reduced (ROWS_IN_FLIGHT 2). red, s_last and stage: the kernel's shared memory (stage: (ROWS_PER_BLOCK - 1) *
// TPR * VEC floats at least, for node mode). one_cluster(a): the whole kernel's path, run by the first cluster instead
// of the walk when the vector path's checks hold, rows <= 64 (so P = rows: dw_partials >= min(rows, 128), one row per
// partial) and hidden % VEC == 0; the other clusters have nothing to do then.
template <typename T, int BLOCK, int VEC, int UNROLL, int ROWS_PER_BLOCK, bool PREFETCH, int CLUSTER,
          typename OneCluster = NoOneCluster>
__device__ __forceinline__ void walk_partials(T* dx, float* dw, float* scratch, const T* x, const T* dy, const T* w,
                                              int rows, int hidden, long long x_row_stride, long long dy_row_stride,
                                              long long dx_row_stride, float eps, float2 (*red)[32], int* s_last,
                                              float* stage, OneCluster one_cluster = {}) {
    constexpr int TPR = BLOCK / ROWS_PER_BLOCK;
    constexpr int CHUNK = TPR * VEC;  // columns per ownership chunk
    constexpr unsigned VEC_BYTES = VEC * sizeof(T);
    constexpr bool VECTOR_PATH = VEC_BYTES >= 4;
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
    if constexpr (has_one_cluster<OneCluster>) {
        if (vector_ok && rows <= 64 && hidden % VEC == 0) {
            if (cluster != 0) return;  // grid: one cluster (any further ones have nothing to do)
            one_cluster(a);
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
                partial_vector<T, TPR, VEC, UNROLL, PREFETCH, ROWS_PER_BLOCK, CLUSTER>(
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
            if (P > DW_TREE_FAN) tree_arrive<BLOCK, CHUNK, CLUSTER>(tree, P, 1, parent, 1, rank, s_last);
        } else {
            tree_arrive<BLOCK, CHUNK, CLUSTER>(tree, P, 0, first, count, rank, s_last);
        }
    }
}

// ---- sums in registers (the node and whole kernels) ----------------------------------------------------------------

// c ? a : b on values already in registers: as C, the compiler turns a select of two array elements into a load from
// a selected address, which puts the array in local memory.
__device__ __forceinline__ float select_value(bool c, float a, float b) {
    float r;
    asm("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %3, 0;\n\tselp.f32 %0, %1, %2, p;\n\t}"
        : "=f"(r)
        : "f"(a), "f"(b), "r"(static_cast<unsigned>(c)));
    return r;
}

// One step of warp_transpose_sum32 or _sum16 (HALF = 16, 8, .., 1, a template so that every index is a constant):
// lane keeps v[i + HALF] (its HALF bit set) or v[i] in v[i], plus the partner lane's copy of the same value.
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

// The rows r = base .. base + 15 of a batch add to the tree (fan-in 8 over one-row partials, P = rows <= 64): s1 is the
// level-1 node being summed (its first child, then += the next ones in order), s2 the root being summed from the
// level-1 nodes. With rows <= 8 the only level-1 node is the root: s2 = s1 then. __fadd_rn: never contracted with the
// term's multiply, so every addition is the tree's (the same values as sum_children and node_sum add).
__device__ __forceinline__ void whole_tree_add(float t, int k, bool node_done, bool first_node, float& s1, float& s2) {
    s1 = k % 8 == 0 ? t : __fadd_rn(s1, t);
    if (node_done) s2 = first_node ? s1 : __fadd_rn(s2, s1);
}

}  // namespace ktune::dev::rmsnorm_bwd
