#pragma once
// RMSNorm backward, the node kernel for small M: one cluster owns every row, a thread group per level-1 node of the
// dw tree, every load issued first thing. Operation, dw's tree, the cluster's columns and the scratch:
// rmsnorm_bwd_common.cuh. Driven by search_spaces/rmsnorm_bwd.yaml (alternative node).
//
// Grid: one cluster; ROWS_PER_BLOCK = ceil(rows / 8) thread groups per block, group g holding its columns of rows
// 8g .. 8g + 7, the level-1 node g of the dw tree. Every load issued first thing in the kernel, before the launch
// checks (node_load), one block barrier and one cluster barrier for the row sums, dw summed in registers (nodes) and
// through shared memory (root). Taken when 1 <= rows <= 8 * ROWS_PER_BLOCK, hidden % VEC == 0, one pass and the vector
// path's alignment hold; otherwise the rows walk (rmsnorm_bwd_common.cuh) runs on the one cluster (correct, slow).
//
// Tunables (template parameters, named as the YAML keys): BLOCK, VEC (VEC * sizeof(T) >= 4: the vector path), UNROLL,
// ROWS_PER_BLOCK and CLUSTER as the common header says.
#include "kernels/rmsnorm/rmsnorm_bwd_common.cuh"

namespace ktune::dev::rmsnorm_bwd {

// ---- the node path -------------------------------------------------------------------------------------------------
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

}  // namespace ktune::dev::rmsnorm_bwd

template <typename T, int BLOCK, int VEC, int UNROLL, int ROWS_PER_BLOCK, int CLUSTER>
// One block per SM (minBlocks 1; 0 is the default, identical code): without it ptxas caps these configurations at 64
// registers and spills (e.g. bf16 BLOCK 256, ROWS_PER_BLOCK 2: 88 registers with it, none spilled).
__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(BLOCK, 1)
    rmsnorm_bwd_node(T* __restrict__ dx, float* __restrict__ dw, float* __restrict__ scratch, const T* __restrict__ x,
                     const T* __restrict__ dy, const T* __restrict__ w, int rows, int hidden, long long x_row_stride,
                     long long dy_row_stride, long long dx_row_stride, float eps) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 2, "rmsnorm_bwd_node: T is float, __half or __nv_bfloat16");
    static_assert(ROWS_PER_BLOCK >= 1 && 8 % ROWS_PER_BLOCK == 0, "rmsnorm_bwd_node: ROWS_PER_BLOCK divides 8");
    static_assert(BLOCK >= 32 && BLOCK <= 1024, "rmsnorm_bwd_node: BLOCK in [32, 1024]");
    static_assert(BLOCK % (32 * ROWS_PER_BLOCK) == 0, "rmsnorm_bwd_node: BLOCK % (32 * ROWS_PER_BLOCK) == 0");
    static_assert(VEC >= 1 && (VEC & (VEC - 1)) == 0, "rmsnorm_bwd_node: VEC is a power of two");
    static_assert(VEC * sizeof(T) <= 16, "rmsnorm_bwd_node: VEC * sizeof(T) <= 16");
    static_assert(VEC * sizeof(T) >= 4, "rmsnorm_bwd_node: VEC * sizeof(T) >= 4 (the vector path)");
    static_assert(UNROLL >= 1 && UNROLL <= 32, "rmsnorm_bwd_node: UNROLL in [1, 32]");
    static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4 || CLUSTER == 8 || CLUSTER == 16,
                  "rmsnorm_bwd_node: CLUSTER in {1, 2, 4, 8, 16}");
    static_assert(ktune::rmsnorm_bwd_layout::DW_TREE_FAN % ROWS_PER_BLOCK == 0,
                  "rmsnorm_bwd_node: a block's partials share a node");

    using namespace ktune::dev;
    using namespace ktune::dev::rmsnorm_bwd;
    constexpr int TPR = BLOCK / ROWS_PER_BLOCK;
    constexpr unsigned VEC_BYTES = VEC * sizeof(T);
    __shared__ float2 red[2][32];  // per warp of a group, double-buffered (see group_sum2 / cluster_sum2)
    __shared__ int s_last;
    // Node mode's partials (node_sum) on the rows walk; the node path's nodes (all UNROLL accesses at once).
    __shared__ __align__(16) float stage[ROWS_PER_BLOCK > 1 ? (ROWS_PER_BLOCK - 1) * TPR * VEC * UNROLL : 4];
    __shared__ float node_w[BLOCK / 32][2 * NODE_ROWS];              // per warp, per lane
    __shared__ float node_c[CLUSTER][ROWS_PER_BLOCK][2 * NODE_ROWS];  // per rank, group, lane
    __shared__ __align__(8) unsigned long long node_bar;              // the row sums' exchange

    // The node path first, ahead of the rows walk's set-up: its loads go out before any check (node_load: they
    // cannot fault), and the launch checks run while they fly. Uniform over the grid.
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
        const Rows a{x_row_stride, dy_row_stride, dx_row_stride, rows, hidden, 1.0f / static_cast<float>(hidden), eps,
                     static_cast<int>(blockIdx.x % CLUSTER)};
        node_vector<T, TPR, VEC, UNROLL, ROWS_PER_BLOCK, CLUSTER>(dx, dw, a, wv, xv, gv, node_w, node_c, stage,
                                                                  &node_bar);
        return;
    }
    walk_partials<T, BLOCK, VEC, UNROLL, ROWS_PER_BLOCK, false, CLUSTER>(dx, dw, scratch, x, dy, w, rows, hidden,
                                                                         x_row_stride, dy_row_stride, dx_row_stride,
                                                                         eps, red, &s_last, stage);
}
