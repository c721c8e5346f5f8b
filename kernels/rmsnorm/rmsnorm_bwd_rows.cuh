#pragma once
// RMSNorm backward, the rows kernel: clusters walk the grid over groups of ROWS_PER_BLOCK leaf partials, and the dw
// tree is summed through scratch by the block that completes each node. Operation, dw's tree, the cluster's columns,
// the launch and the scratch: rmsnorm_bwd_common.cuh. Driven by search_spaces/rmsnorm_bwd.yaml (alternative rows).
//
// Tunables (template parameters, named as the YAML keys): BLOCK, VEC, UNROLL, ROWS_PER_BLOCK and CLUSTER as the common
// header says, and
//   ROWS_IN_FLIGHT  1 or 2: rows of x and dy a group holds in registers. 2 issues the loads of a partial's next row
//                   before reducing the current one (loads always in flight, twice the registers for x and dy); 1
//                   loads each row when it is reached. With CLUSTER 1 and ROWS_PER_BLOCK 1 both take the one-row path
//                   at rows == 1 (one_row below: loads first, one block reduction; on the H100 bf16 H=2048 2.21 ->
//                   1.89 us, 2026-11-26); VEC may then be 4 bytes wide too.
// The one-row path (rows == 1) needs neither strides nor scratch: only the pointers' alignment and hidden % VEC == 0.
#include "kernels/rmsnorm/rmsnorm_bwd_common.cuh"

namespace ktune::dev::rmsnorm_bwd {

// ---- one row -------------------------------------------------------------------------------------------------------
//
// The one-row path: rows == 1 on one block (CLUSTER 1, ROWS_PER_BLOCK 1). dw is the row's own
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
__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(BLOCK)
    rmsnorm_bwd_rows(T* __restrict__ dx, float* __restrict__ dw, float* __restrict__ scratch, const T* __restrict__ x,
                     const T* __restrict__ dy, const T* __restrict__ w, int rows, int hidden, long long x_row_stride,
                     long long dy_row_stride, long long dx_row_stride, float eps) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 2, "rmsnorm_bwd_rows: T is float, __half or __nv_bfloat16");
    static_assert(ROWS_PER_BLOCK >= 1 && 8 % ROWS_PER_BLOCK == 0, "rmsnorm_bwd_rows: ROWS_PER_BLOCK divides 8");
    static_assert(BLOCK >= 32 && BLOCK <= 1024, "rmsnorm_bwd_rows: BLOCK in [32, 1024]");
    static_assert(BLOCK % (32 * ROWS_PER_BLOCK) == 0, "rmsnorm_bwd_rows: BLOCK % (32 * ROWS_PER_BLOCK) == 0");
    static_assert(VEC >= 1 && (VEC & (VEC - 1)) == 0, "rmsnorm_bwd_rows: VEC is a power of two");
    static_assert(VEC * sizeof(T) <= 16, "rmsnorm_bwd_rows: VEC * sizeof(T) <= 16");
    static_assert(UNROLL >= 1 && UNROLL <= 32, "rmsnorm_bwd_rows: UNROLL in [1, 32]");
    static_assert(ROWS_IN_FLIGHT == 1 || ROWS_IN_FLIGHT == 2, "rmsnorm_bwd_rows: ROWS_IN_FLIGHT is 1 or 2");
    static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4 || CLUSTER == 8 || CLUSTER == 16,
                  "rmsnorm_bwd_rows: CLUSTER in {1, 2, 4, 8, 16}");
    static_assert(ktune::rmsnorm_bwd_layout::DW_TREE_FAN % ROWS_PER_BLOCK == 0,
                  "rmsnorm_bwd_rows: a block's partials share a node");

    using namespace ktune::dev;
    using namespace ktune::dev::rmsnorm_bwd;
    constexpr int TPR = BLOCK / ROWS_PER_BLOCK;
    constexpr unsigned VEC_BYTES = VEC * sizeof(T);
    constexpr bool VECTOR_PATH = VEC_BYTES >= 4;
    __shared__ float2 red[2][32];  // per warp of a group, double-buffered (see group_sum2 / cluster_sum2)
    __shared__ int s_last;
    __shared__ __align__(16) float stage[ROWS_PER_BLOCK > 1 && VECTOR_PATH ? (ROWS_PER_BLOCK - 1) * TPR * VEC : 4];

    // One row on one block (the latency of M = 1): the one-row path, before any other set-up.
    if constexpr (CLUSTER == 1 && ROWS_PER_BLOCK == 1 && VECTOR_PATH) {
        if (one_row<T, BLOCK, VEC, UNROLL>(dx, dw, x, dy, w, rows, hidden, eps, red[0])) return;
    }
    walk_partials<T, BLOCK, VEC, UNROLL, ROWS_PER_BLOCK, ROWS_IN_FLIGHT == 2, CLUSTER>(
        dx, dw, scratch, x, dy, w, rows, hidden, x_row_stride, dy_row_stride, dx_row_stride, eps, red, &s_last, stage);
}
