#pragma once
// Row softmax, the registers kernel: a thread-block cluster per row, the row held in its registers. Operation, the
// cluster exchange and the launch: softmax_common.cuh. Driven by search_spaces/softmax.yaml (alternative registers).
//
// Two walks, chosen per launch from the row length (softmax_common.cuh):
//   resident   the cluster's registers hold the row (cols <= CLUSTER * BLOCK * VEC * UNROLL): x is read from DRAM once.
//   streaming  longer rows: each block streams its share twice, an online max/sum pass and the output pass. The
//              second read mostly hits L2 (the rows in flight fit), so DRAM traffic stays close to read-once.
// Measured on an H100 (bf16, M = 4096): N = 32768 is fastest resident in one 1024-thread block (2702 GB/s, 90 % of
// copy); a 128256-column row is fastest streaming over a 2- or 4-block cluster (2447-2625 GB/s, 88 %) rather than
// resident over 8 blocks (2041 GB/s): a resident block holds at most 64 KiB of the row in registers, so with one or
// two such blocks per SM too few bytes are in flight, and DRAM idles while a block reduces and waits at the cluster
// barrier (the staged kernel, softmax_fwd_staged.cuh, removes that limit).
//
// Tunables (template parameters, named as the YAML keys):
//   BLOCK    threads per block: a multiple of 32 in [32, 1024].
//   VEC      elements per vector access: a power of two with 8 <= VEC * sizeof(T) <= 16.
//   UNROLL   vector accesses each thread holds per pass, in [1, 32], with VEC * UNROLL * sizeof(T) <= 128 (32
//            registers) and BLOCK * VEC * UNROLL * sizeof(T) <= 64 KiB (a 1024-thread block gets 64 registers a
//            thread: 16 of row data leave enough for the rest; 32 spill).
//   CLUSTER  blocks per row (thread-block cluster size, __cluster_dims__): 1, 2, 4, 8 or 16 (8 is the portable
//            maximum; an H100 has 16 where the launch allows non-portable sizes).
// Vector access k of thread t in block rank b covers the VEC elements at ((k * CLUSTER + b) * BLOCK + t) * VEC (per
// pass of the streaming walk), so every block reads BLOCK-wide coalesced runs.
//
// Launch: as softmax_common.cuh says; static shared memory only. The vector walks need x and out aligned to
// VEC * sizeof(T) bytes and both strides multiples of VEC (checked once per launch); cols % VEC leftover elements are
// taken element-wise by the first threads of rank 0. Otherwise rows take the streaming walk with element accesses
// (scalar path).
//
// Loads first (load_first_row): at decode sizes (M = 1..16) the kernel is one chain of latencies (kernel start, the
// instruction fetch of the code before the first load, cold after an L2 flush, one DRAM round trip, the cluster
// exchange, the stores). The kernel used to set up the exchange, check the launch and pick the path first: its first
// load was the ~80th-100th instruction executed, after two jumps 13-17 KiB into the code. Now the kernel's first code
// computes each thread's resident-path addresses in its cluster's first row and issues those loads (~the 30th
// instruction); a thread loads only whole accesses inside that row, and only when x and its row stride are aligned to
// the access and the row fits the cluster's registers, so nothing can fault whatever the launch. The exchange's
// set-up and the launch checks run while the loads fly. On the resident path (vector_ok, the row fits) the loaded
// registers are exactly what softmax_row_resident would load and the same code reduces them (same bits); on the
// streaming and scalar paths the early loads are dropped. One copy of the resident code: a separate loads-first copy
// (or the other paths out of line, __noinline__) cost up to +30 registers a thread in ptxas's allocation. On the H100,
// same call, against the kernel before: best kernel time -3 to -9 % at M = 1 and 16 (bf16 M=16 N=32768 3.10 -> 2.91
// us, M=1 N=128256 3.39 -> 3.11 us), M >= 256 within 1 % (2026-11-26).
#include "kernels/softmax/softmax_common.cuh"

namespace ktune::dev::softmax {

// The loads-first prologue (see the header): issues this cluster's first row's resident-path loads into xb,
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

template <typename T, int BLOCK, int VEC, int UNROLL, int CLUSTER>
__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(BLOCK)
    softmax_fwd_registers(T* __restrict__ out, const T* __restrict__ x, int rows, int cols, long long x_row_stride,
                          long long out_row_stride, float scale) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 2, "softmax_fwd_registers: T is float, __half or __nv_bfloat16");
    static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0,
                  "softmax_fwd_registers: BLOCK a multiple of 32 in [32, 1024]");
    static_assert(VEC >= 1 && (VEC & (VEC - 1)) == 0, "softmax_fwd_registers: VEC is a power of two");
    static_assert(VEC * sizeof(T) <= 16, "softmax_fwd_registers: VEC * sizeof(T) <= 16");
    static_assert(VEC * sizeof(T) >= 8,
                  "softmax_fwd_registers: VEC * sizeof(T) >= 8 (narrower accesses are not tuned)");
    static_assert(UNROLL >= 1 && UNROLL <= 32, "softmax_fwd_registers: UNROLL in [1, 32]");
    static_assert(VEC * UNROLL * sizeof(T) <= 128,
                  "softmax_fwd_registers: VEC * UNROLL * sizeof(T) <= 128 (registers)");
    static_assert(BLOCK * VEC * UNROLL * sizeof(T) <= 65536,
                  "softmax_fwd_registers: BLOCK * VEC * UNROLL * sizeof(T) <= 64 KiB (registers)");
    static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4 || CLUSTER == 8 || CLUSTER == 16,
                  "softmax_fwd_registers: CLUSTER in {1, 2, 4, 8, 16}");

    using namespace ktune::dev;
    using softmax::RowPath;
    __shared__ softmax::Scratch<BLOCK, CLUSTER> sh;
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
}
