#pragma once
// RMSNorm backward, the whole kernel for small M: one cluster owns every row and holds 16 rows per thread at a time,
// dw summed in registers. Operation, dw's tree, the cluster's columns and the scratch: rmsnorm_bwd_common.cuh. Driven
// by search_spaces/rmsnorm_bwd.yaml (alternative whole).
//
// Grid: one cluster, one group per block (ROWS_PER_BLOCK 1). The cluster owns every row: each thread loads its
// columns of 16 rows at once, the 32 row sums of the batch go through one block barrier and one cluster barrier, and
// dw is summed in registers along the same tree (no scratch rows, fences or arrivals). Taken when rows <= 64 (so
// P = rows: one row per partial), hidden % VEC == 0 and the vector path's alignment hold; otherwise the rows walk
// (rmsnorm_bwd_common.cuh) runs on the one cluster (correct, slow).
// Why: at M = 16 the rows kernel's tree costs a chain of dependent round trips after the kernel's own loads (node row
// stored, fence, atomic, the last block re-reads the rows, stores dw: 6-8 us measured on an H100 against 2.7 us at
// M = 1, where P = 1 has no tree). One cluster holding every row needs one DRAM round trip for x, dy and w together,
// one cluster barrier, then the stores.
//
// Tunables (template parameters, named as the YAML keys): BLOCK, VEC (VEC * sizeof(T) >= 4: the vector path), UNROLL
// and CLUSTER as the common header says.
#include "kernels/rmsnorm/rmsnorm_bwd_common.cuh"

namespace ktune::dev::rmsnorm_bwd {

// ---- the whole-problem path ----------------------------------------------------------------------------------------
//
// One cluster owns every row (M <= 64, so P = M and every partial is one row): block `rank` holds its columns (the
// same chunks as above) of WHOLE_ROWS rows at a time, all loads issued at once, one row-sum exchange per batch of rows,
// and dw summed in registers along the tree of the layout file: no scratch, no fences, no arrivals.

inline constexpr int WHOLE_ROWS = 16;  // rows per batch: 2 * 16 row sums = one per lane of a warp

// Sums 32 values over the warp's 32 lanes with 31 shuffles (instead of 5 per value): each step keeps half of the
// values, the half picked by the lane's bit, and adds the partner's copy of it. Returns, in lane l, the warp's sum of
// v[l] (the order of its additions depends on l only: the same in every warp).
__device__ __forceinline__ float warp_transpose_sum32(float (&v)[32]) {
    transpose_step<16>(v, threadIdx.x & 31);
    return v[0];
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

}  // namespace ktune::dev::rmsnorm_bwd

template <typename T, int BLOCK, int VEC, int UNROLL, int CLUSTER>
__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(BLOCK)
    rmsnorm_bwd_whole(T* __restrict__ dx, float* __restrict__ dw, float* __restrict__ scratch, const T* __restrict__ x,
                      const T* __restrict__ dy, const T* __restrict__ w, int rows, int hidden, long long x_row_stride,
                      long long dy_row_stride, long long dx_row_stride, float eps) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 2, "rmsnorm_bwd_whole: T is float, __half or __nv_bfloat16");
    static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0, "rmsnorm_bwd_whole: BLOCK a multiple of 32 <= 1024");
    static_assert(VEC >= 1 && (VEC & (VEC - 1)) == 0, "rmsnorm_bwd_whole: VEC is a power of two");
    static_assert(VEC * sizeof(T) <= 16, "rmsnorm_bwd_whole: VEC * sizeof(T) <= 16");
    static_assert(VEC * sizeof(T) >= 4, "rmsnorm_bwd_whole: VEC * sizeof(T) >= 4 (the vector path)");
    static_assert(UNROLL >= 1 && UNROLL <= 32, "rmsnorm_bwd_whole: UNROLL in [1, 32]");
    static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4 || CLUSTER == 8 || CLUSTER == 16,
                  "rmsnorm_bwd_whole: CLUSTER in {1, 2, 4, 8, 16}");

    using namespace ktune::dev;
    using namespace ktune::dev::rmsnorm_bwd;
    constexpr int ROWS_PER_BLOCK = 1;  // one group: the whole block
    constexpr int TPR = BLOCK;
    __shared__ float2 red[2][32];  // per warp of a group, double-buffered (see group_sum2 / cluster_sum2)
    __shared__ int s_last;
    __shared__ __align__(16) float stage[4];  // node mode's partials on the rows walk: none with one group
    __shared__ float whole_w[2][TPR];         // per warp, per lane; two batches
    __shared__ float whole_c[2][32];          // the block's sums

    // The whole-problem path, once the rows walk is set up and its conditions checked (walk_partials).
    const auto whole = [&](const Rows& a) {
        whole_vector<T, TPR, VEC, UNROLL, CLUSTER>(dx, dw, x, dy, w, a, whole_w, whole_c);
        // No block leaves while another block of its cluster may still read its shared memory.
        if constexpr (CLUSTER > 1) {
            __cluster_barrier_arrive();
            __cluster_barrier_wait();
        }
    };
    walk_partials<T, BLOCK, VEC, UNROLL, ROWS_PER_BLOCK, false, CLUSTER>(dx, dw, scratch, x, dy, w, rows, hidden,
                                                                         x_row_stride, dy_row_stride, dx_row_stride,
                                                                         eps, red, &s_last, stage, whole);
}
