#pragma once
// Dense skinny linear for decode, the Hopper warpgroup-MMA kernel (alternative `wgmma` of search_spaces/
// linear_skinny*.yaml; the mma.sync kernel, linear_skinny_fwd.cuh, is alternative `mma`): y[m, n] = sum_k x[m, k]
// W[n, k] for M <= 64, same op, buffers, scratch and result as linear_skinny_fwd.cuh. Needs sm_90a
// (kernel.arch_specific); any other device pass compiles to a trap.
//
// Why a second kernel: at M = 32..64 the mma.sync kernel keeps x in registers per warp and re-reads it for every 16
// rows of W (x traffic up to 4x the weights', and 128 accumulator registers at M = 64), so it falls to 55-65 % of the
// read roofline where cuBLAS stays at the weight-read time. Here x is swapped into wgmma's N: D[n, m] = W[n, :] .
// x[m, :] with a 64 (n) x 64 (k) tile of W as A and an XN (m) x 64 (k) tile of x as B (XN = 8..64 >= M), both K-major
// in shared memory, so the tensor cores read each staged x byte once per 64 rows of W, x is read from L2 once per
// block (not per warp), and the accumulators are XN / 2 per thread and slab. Rows of x past M are zero-filled.
// The same deep cp.async pipeline serves small M too (XN 8, 16): the tuner decides against mma there.
//
// Reused from the validated wgmma GEMM (kernels/gemm/gemm_wgmma.cuh, unchanged; kernels/gemm/wgmma_ops.cuh gained
// n 8, 16, 32): the 128-byte-swizzle descriptors, swizzled cp.async tile copies (zero-fill past the rows / K),
// fence.proxy.async + barrier before the wgmmas, the commit / wait discipline, its stage recycling (tiles loaded
// STAGES - 2 ahead; wait_group 1 keeps one wgmma group in flight) and its accumulator layout. Block: WG warpgroups x MT
// slabs = 64 * WG * MT rows of W (n), all M rows of x (shared by the warpgroups), 1 / SPLIT_K of the 64-wide k tiles.
// Stage: the W tile then the x tile, 128 bytes a row. Weights in flight per block: (STAGES - 2) * 64 * WG * MT * 128
// bytes; x's tiles come from L2 (x is small and read by every block).
//
// Split-K: as linear_skinny_fwd.cuh (scratch layout of kernels/quant_linear/quant_linear_layout.cuh): each split
// block writes its fp32 partial [split, M, N], the last to arrive at the block's counter (index blockIdx.x, below the
// layout's counter_words) sums the splits in order, writes y and resets the counter. Deterministic.
// Without scratch (gemm_act's `skinny_wgmma`, CLUSTER_K > 1): the k splits are the blocks of a cluster (1, CLUSTER_K,
// 1); past their loops (a cluster barrier) each block but the first stores its accumulators into the first's stages
// over distributed shared memory, and after a second barrier the first adds them in rank order and writes y.
// Deterministic too.
//
// Tunables: WG warpgroups per block (1, 2); MT 64-row slabs per warpgroup (1, 2); XN x rows per tile, the wgmma n
// (8, 16, 32, 64; >= M); SPLIT_K k splits (1..16); STAGES shared-memory stages (>= 3). Any N, K; K % 8 == 0 and
// 16-byte aligned x, w take cp.async; otherwise (checked once per launch) the tiles are filled element by element
// with the same swizzle (slow, correct).
// Launch: grid (ceil_div(N, 64 * WG * MT), SPLIT_K), block 128 * WG, dynamic shared memory
// STAGES * (64 * WG * MT + XN) * 128 + 1024.
//
// Programmatic launch (kernels/common/dependent_launch.cuh), as linear_skinny_fwd.cuh: an L2 prefetch of the block's
// first weight tiles before wait_prior_grids(), x, y and the scratch only after it; launch_dependents() once the
// block's weight stream is done.
//
// The TMA feed (alternative `wgmma_tma`, linear_skinny_wgmma_tma_fwd): the same tiles, stages, MMAs and split-K, but
// thread 0 fills a stage with two TMA copies (tensor maps over w [N, K] and x [M, K], boxes [64 WG MT, 64] and
// [XN, 64], 128-byte swizzle: the layout the descriptors read; rows past N or M and k past K read as zeros) that
// complete the stage's mbarrier, instead of 16 bytes per thread and instruction. Its first STAGES - 2 weight tiles go
// straight into shared memory before wait_prior_grids() (the weights are constant), the x tiles after. K % 8 == 0
// (TMA's 16-byte pitch; the space's constraint).
#include "kernels/common/dependent_launch.cuh"
#include "kernels/gemm/gemm_wgmma.cuh"
#include "kernels/gemm/gemm_wgmma_ws.cuh"
#include "kernels/linear_skinny/linear_skinny_fwd.cuh"

namespace ktune::dev::linear_skinny_wgmma {

namespace gm = ktune::dev::gemm;

// The plain path's copy of ROWS x 64 k into a swizzled tile: element loads (2-byte aligned), zeros past row_end / K,
// one 16-byte shared store per chunk at the cp.async path's address.
template <typename T, int ROWS, int THREADS>
__device__ __forceinline__ void load_tile_plain(unsigned dst, const T* __restrict__ src, long long row0,
                                                long long row_end, int k0, int K) {
    constexpr int chunks = ROWS * (gm::kRowBytes / 16);
    const unsigned short* s = reinterpret_cast<const unsigned short*>(src);
    for (int idx = threadIdx.x; idx < chunks; idx += THREADS) {
        const int r = idx >> 3, c = idx & 7;
        const long long row = row0 + r;
        const int k = k0 + c * 8;
        unsigned v[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const bool lo_in = row < row_end && k + 2 * i < K, hi_in = row < row_end && k + 2 * i + 1 < K;
            const unsigned lo = lo_in ? static_cast<unsigned>(__ldg(s + row * K + k + 2 * i)) : 0u;
            const unsigned hi = hi_in ? static_cast<unsigned>(__ldg(s + row * K + k + 2 * i + 1)) : 0u;
            v[i] = lo | (hi << 16);
        }
        asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(dst + r * gm::kRowBytes + ((c ^ (r & 7)) << 4)),
                     "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3])
                     : "memory");
    }
}

// How a stage is filled: element loads (any alignment), cp.async by every thread, or TMA copies issued by thread 0.
enum class Feed { plain, cp_async, tma };
using ktune::dev::gemm_ws::TensorMap;

// The shared::cluster address of byte `addr` of this block's shared memory in cluster block `rank`'s.
__device__ __forceinline__ unsigned cluster_address(unsigned addr, unsigned rank) {
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(addr), "r"(rank));
    return remote;
}

// CLUSTER_K > 1: k split over a cluster of CLUSTER_K blocks (blockIdx.y, the cluster's rank) instead of scratch; the
// partials meet in the first block's shared memory (header comment).
template <Feed FEED, typename T, int WG, int MT, int XN, int SPLIT_K, int STAGES, int ACT, int CLUSTER_K = 1>
__device__ __forceinline__ void skinny_wgmma_path(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w,
                                             const T* __restrict__ bias, float* __restrict__ scratch, int M, int N,
                                             int K, int max_split_k, const TensorMap* x_map = nullptr,
                                             const TensorMap* w_map = nullptr) {
    constexpr bool FAST = FEED != Feed::plain;  // keeps one wgmma group in flight
    static_assert(sizeof(T) == 2, "linear_skinny wgmma: T is __half or __nv_bfloat16");
    static_assert(WG == 1 || WG == 2, "linear_skinny wgmma: WG is 1 or 2");
    static_assert(MT == 1 || MT == 2, "linear_skinny wgmma: MT is 1 or 2");
    static_assert(XN == 8 || XN == 16 || XN == 32 || XN == 64, "linear_skinny wgmma: XN is 8, 16, 32 or 64");
    static_assert(SPLIT_K >= 1 && SPLIT_K <= ktune::quant_linear_layout::MAX_SPLIT_K,
                  "linear_skinny wgmma: SPLIT_K in [1, 16]");
    static_assert(STAGES >= 3, "linear_skinny wgmma: tiles are loaded STAGES - 2 ahead");
    static_assert(CLUSTER_K == 1 || SPLIT_K == 1, "linear_skinny wgmma: k split through scratch or a cluster, not both");
    constexpr int SPLITS = SPLIT_K * CLUSTER_K;
    constexpr int THREADS = 128 * WG;
    constexpr int BW = 64 * WG * MT;  // W rows per block
    constexpr int A_BYTES = BW * gm::kRowBytes;
    constexpr int STAGE_BYTES = (BW + XN) * gm::kRowBytes;
    // 1024 bytes for aligning the base, TMA another 1024 for the mbarriers.
    static_assert(STAGES * STAGE_BYTES + (FEED == Feed::tma ? 2048 : 1024) <= 232448,
                  "linear_skinny wgmma: more than 227 KiB of shared memory");
    constexpr int ACC = XN / 2;  // fp32 accumulators per thread and slab (m64nXN)
    // The other cluster blocks' partials land in the first block's stages (free once every block is past its loop).
    static_assert((CLUSTER_K - 1) * MT * ACC * THREADS * 4 <= STAGES * STAGE_BYTES,
                  "linear_skinny wgmma: the cluster's partials fit in the stages");
    namespace layout = ktune::quant_linear_layout;
    using ktune::dev::linear_skinny::activate;

    extern __shared__ unsigned char smem_raw[];
    __shared__ int s_last;
    // A launch that does not match the configuration writes nothing (uniform over the grid).
    if (gridDim.x != (static_cast<unsigned>(N) + (BW - 1)) / BW || gridDim.y != SPLITS || gridDim.z != 1 ||
        M > XN || SPLIT_K > max_split_k)
        return;
    const unsigned smem = (gm::smem_addr(smem_raw) + 1023u) & ~1023u;

    const long long n0 = static_cast<long long>(blockIdx.x) * BW;
    const int k_tiles = (K + gm::kBK - 1) / gm::kBK;
    const int per_split = (k_tiles + SPLITS - 1) / SPLITS;
    const int kt_begin = min(k_tiles, static_cast<int>(blockIdx.y) * per_split);
    const int kt_count = min(k_tiles, kt_begin + per_split) - kt_begin;  // 0 for trailing empty splits

    constexpr int AHEAD = STAGES - 2;  // tiles loaded ahead of the one computed
    // TMA: stage s's mbarrier after the stages (the launch's second 1024 bytes), one arrival that expects the stage's
    // bytes; fill j of stage s completes its phase j.
    const unsigned full_bars = smem + STAGES * STAGE_BYTES;
    const auto full_bar = [&](int s) { return full_bars + 8u * s; };
    namespace ws = ktune::dev::gemm_ws;
    if constexpr (FEED == Feed::tma) {
        if (threadIdx.x == 0) {
            for (int s = 0; s < STAGES; ++s) ws::mbar_init(full_bar(s), 1);
            asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        }
        __syncthreads();
    }
    // The block's i-th k tile's weights, then its x rows, into stage i % STAGES (TMA: thread 0 only; the weights'
    // copy also arms the stage's mbarrier with the whole stage's bytes).
    const auto load_weights = [&](int i) {
        const unsigned base = smem + (i % STAGES) * STAGE_BYTES;
        const int k0 = (kt_begin + i) * gm::kBK;
        if constexpr (FEED == Feed::tma) {
            ws::mbar_arrive_expect_tx(full_bar(i % STAGES), STAGE_BYTES);
            ws::tma_load_2d(base, *w_map, k0, static_cast<int>(n0), full_bar(i % STAGES));
        } else if constexpr (FEED == Feed::cp_async) {
            gm::load_tile<T, BW, THREADS>(base, w, n0, N, k0, K);
        } else {
            load_tile_plain<T, BW, THREADS>(base, w, n0, N, k0, K);
        }
    };
    const auto load_x = [&](int i) {
        const unsigned base = smem + (i % STAGES) * STAGE_BYTES;
        const int k0 = (kt_begin + i) * gm::kBK;
        if constexpr (FEED == Feed::tma)
            ws::tma_load_2d(base + A_BYTES, *x_map, k0, 0, full_bar(i % STAGES));
        else if constexpr (FEED == Feed::cp_async)
            gm::load_tile<T, XN, THREADS>(base + A_BYTES, x, 0, M, k0, K);
        else
            load_tile_plain<T, XN, THREADS>(base + A_BYTES, x, 0, M, k0, K);
    };

    // Programmatic launch (kernels/common/dependent_launch.cuh): the weights are constant, so the block fetches its
    // rows' first STAGES - 2 k tiles (what the pipeline's prologue loads; no more, or the prefetch goes ahead of the
    // loop's own loads) while the kernel before, which wrote x, finishes: TMA into the stages, cp.async an L2 prefetch;
    // x, y and scratch only after it has.
    if constexpr (FEED == Feed::tma) {
        if (threadIdx.x == 0) {
            ws::prefetch_tensor_map(*w_map);
            ws::prefetch_tensor_map(*x_map);
            for (int s = 0; s < AHEAD && s < kt_count; ++s) load_weights(s);
        }
    } else if constexpr (FAST) {
        const unsigned row_bytes = 2u * static_cast<unsigned>(K);
        const unsigned from = static_cast<unsigned>(kt_begin) * gm::kRowBytes;
        const unsigned to = min(row_bytes, from + static_cast<unsigned>(min(kt_count, STAGES - 2)) * gm::kRowBytes);
        if (to > from) {
            const unsigned bytes = ktune::dev::early_bytes(1ull * N * SPLITS, to - from, 128);
            const unsigned char* w_bytes = reinterpret_cast<const unsigned char*>(w);
            for (int r = threadIdx.x; r < BW && n0 + r < N; r += THREADS)
                ktune::dev::prefetch_l2(w_bytes + (n0 + r) * row_bytes + from, bytes);
        }
    }
    ktune::dev::wait_prior_grids();

    const int wg = threadIdx.x / 128;
    float acc[MT][ACC];
#pragma unroll
    for (int t = 0; t < MT; ++t)
#pragma unroll
        for (int i = 0; i < ACC; ++i) acc[t][i] = 0.0f;

    {
        if constexpr (FEED == Feed::tma) {
            if (threadIdx.x == 0)
                for (int s = 0; s < AHEAD && s < kt_count; ++s) load_x(s);
        } else {
#pragma unroll
            for (int s = 0; s < AHEAD; ++s) {
                if (s < kt_count) {
                    load_weights(s);
                    load_x(s);
                }
                gm::cp_async_commit();  // empty groups past the end keep the count of groups per tile fixed
            }
        }
        for (int i = 0; i < kt_count; ++i) {
            if constexpr (FEED == Feed::tma) {
                ws::mbar_wait(full_bar(i % STAGES), (i / STAGES) & 1);  // tile i has landed
                __syncthreads();  // every warpgroup is done with tile i - 2's stage
                if (threadIdx.x == 0 && i + AHEAD < kt_count) {
                    load_weights(i + AHEAD);
                    load_x(i + AHEAD);
                }
            } else {
                gm::cp_async_wait<AHEAD - 1>();  // this thread's copies of tile i have landed (plain path: stored)
                gm::fence_proxy_async();
                __syncthreads();  // everyone's have; every warpgroup is done with tile i - 2's stage
                if (i + AHEAD < kt_count) {
                    load_weights(i + AHEAD);
                    load_x(i + AHEAD);
                }
                gm::cp_async_commit();
            }

            const unsigned a_base = smem + (i % STAGES) * STAGE_BYTES + wg * MT * 64 * gm::kRowBytes;
            const unsigned b_base = smem + (i % STAGES) * STAGE_BYTES + A_BYTES;
#pragma unroll
            for (int t = 0; t < MT; ++t) gm::fence_operands(acc[t]);
            gm::wgmma_fence();
#pragma unroll
            for (int ks = 0; ks < gm::kBK / 16; ++ks) {
                const unsigned long long db = gm::smem_desc(b_base + ks * 32);
#pragma unroll
                for (int t = 0; t < MT; ++t)
                    gm::Wgmma<T, XN>::mma(acc[t], gm::smem_desc(a_base + t * 64 * gm::kRowBytes + ks * 32), db);
            }
            gm::wgmma_commit();
            gm::wgmma_wait<FAST ? 1 : 0>();  // the plain path keeps none in flight (else ptxas serializes both)
#pragma unroll
            for (int t = 0; t < MT; ++t) gm::fence_operands(acc[t]);
        }
    }
    gm::wgmma_wait<0>();
    if constexpr (FEED != Feed::tma) gm::cp_async_wait<0>();  // no copy outlives the loop (the trailing groups are empty)
#pragma unroll
    for (int t = 0; t < MT; ++t) gm::fence_operands(acc[t]);
    // The next kernel may start once every block is past its weight stream (dependent_launch.cuh); it still waits for
    // this one's completion before it reads y.
    ktune::dev::launch_dependents();

    if constexpr (CLUSTER_K > 1) {
        // Every block of the cluster past its loop (the first block's stages are free); the others' accumulators into
        // the first's stages, slot r - 1 of rank r, thread-minor (the same thread holds the same outputs in every
        // block); then the first adds them in rank order (deterministic) and writes y as an unsplit block would.
        const unsigned rank = ws::cluster_rank();
        ws::cluster_sync();
        constexpr int SLOT = MT * ACC * THREADS;  // floats
        if (rank != 0) {
            const unsigned remote = cluster_address(smem, 0) + 4u * ((rank - 1) * SLOT + threadIdx.x);
#pragma unroll
            for (int t = 0; t < MT; ++t)
#pragma unroll
                for (int i = 0; i < ACC; ++i)
                    asm volatile("st.shared::cluster.f32 [%0], %1;\n" ::"r"(remote + 4u * ((t * ACC + i) * THREADS)),
                                 "f"(acc[t][i])
                                 : "memory");
        }
        ws::cluster_sync();
        if (rank != 0) return;
#pragma unroll 1
        for (int r = 1; r < CLUSTER_K; ++r) {
            const float* slot = reinterpret_cast<const float*>(smem_raw + (smem - gm::smem_addr(smem_raw))) +
                                (r - 1) * SLOT + threadIdx.x;
#pragma unroll
            for (int t = 0; t < MT; ++t)
#pragma unroll
                for (int i = 0; i < ACC; ++i) acc[t][i] += slot[(t * ACC + i) * THREADS];
        }
    }

    // Accumulator layout (gemm_wgmma.cuh's epilogue): thread l of warp v of the warpgroup holds, per 8-column group j,
    // D rows v * 16 + l / 4 (+ 8) and columns 8 j + 2 (l % 4) (+ 1): acc[4 j + 2 h + e] is row + 8 h, column + e.
    // Rows are W's n, columns x's m: y[m, n].
    const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) & 3;
    float* parts = scratch + layout::counter_words(M, N);
#pragma unroll
    for (int t = 0; t < MT; ++t) {
        const long long n_base = n0 + (wg * MT + t) * 64 + warp * 16 + lane / 4;
#pragma unroll
        for (int j = 0; j < XN / 8; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const long long n = n_base + 8 * h;
                    const int m = 8 * j + 2 * (lane % 4) + e;
                    if (n >= N || m >= M) continue;
                    const float v = acc[t][4 * j + 2 * h + e];
                    if constexpr (SPLIT_K == 1) {  // (CLUSTER_K > 1: the cluster's first block, the sum above)
                        const float b = bias != nullptr ? to_float(bias[n]) : 0.0f;
                        y[static_cast<long long>(m) * N + n] = from_float<T>(activate<ACT>(v + b));
                    } else {
                        parts[(static_cast<long long>(blockIdx.y) * M + m) * N + n] = v;
                    }
                }
    }
    if constexpr (SPLIT_K > 1) {
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned* counter = reinterpret_cast<unsigned*>(scratch) + blockIdx.x;
            const bool last = atomicAdd(counter, 1u) == static_cast<unsigned>(SPLIT_K - 1);
            if (last) *counter = 0u;  // every split has arrived: nobody else touches it in this launch
            s_last = last;
        }
        __syncthreads();
        if (!s_last) return;
        __threadfence();
        // The block's W rows and x rows, n fastest: the splits summed in order.
        for (int i = threadIdx.x; i < BW * M; i += THREADS) {
            const long long n = n0 + i % BW;
            const int m = i / BW;
            if (n >= N) continue;
            float sum = 0.0f;
#pragma unroll 4
            for (int sp = 0; sp < SPLIT_K; ++sp) sum += __ldcg(parts + (static_cast<long long>(sp) * M + m) * N + n);
            if (bias != nullptr) sum += to_float(bias[n]);
            y[static_cast<long long>(m) * N + n] = from_float<T>(activate<ACT>(sum));
        }
    }
}

// The two copy paths as whole bodies, each with its own accumulators: a runtime branch inside one k loop (or two k
// loops sharing the accumulators) made ptxas serialize the wgmmas (C7515).
template <typename T, int WG, int MT, int XN, int SPLIT_K, int STAGES, int ACT>
__device__ __forceinline__ void skinny_wgmma(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w,
                                             const T* __restrict__ bias, float* __restrict__ scratch, int M, int N,
                                             int K, int max_split_k) {
    if (is_aligned(w, 16) && is_aligned(x, 16) && K % 8 == 0)
        skinny_wgmma_path<Feed::cp_async, T, WG, MT, XN, SPLIT_K, STAGES, ACT>(y, x, w, bias, scratch, M, N, K,
                                                                           max_split_k);
    else
        skinny_wgmma_path<Feed::plain, T, WG, MT, XN, SPLIT_K, STAGES, ACT>(y, x, w, bias, scratch, M, N, K,
                                                                        max_split_k);
}

}  // namespace ktune::dev::linear_skinny_wgmma

// The op's kernel (alternative `wgmma` of search_spaces/linear_skinny*.yaml): the arguments of linear_skinny_fwd.
// Launch: grid (ceil_div(N, 64 * WG * MT), SPLIT_K), block 128 * WG, dynamic shared memory
// STAGES * (64 * WG * MT + XN) * 128 + 1024 bytes.
template <typename T, int WG, int MT, int XN, int SPLIT_K, int STAGES>
__global__ void __launch_bounds__(128 * WG, 1)
    linear_skinny_wgmma_fwd(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w,
                            float* __restrict__ scratch, int M, int N, int K, int max_split_k) {
    // Repeated outside the sm_90a pass, so that every target refuses a configuration the space's constraints refuse.
    static_assert(STAGES * (64 * WG * MT + XN) * 128 + 1024 <= 232448,
                  "linear_skinny wgmma: more than 227 KiB of shared memory");
    static_assert(XN == 8 || XN == 16 || XN == 32 || XN == 64, "linear_skinny wgmma: XN is 8, 16, 32 or 64");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    ktune::dev::linear_skinny_wgmma::skinny_wgmma<T, WG, MT, XN, SPLIT_K, STAGES, 0>(y, x, w, nullptr, scratch, M, N, K,
                                                                                max_split_k);
#elif defined(__CUDA_ARCH__)
    __trap();  // a device pass without wgmma (nvcc -arch=sm_90a also emits compute_90 PTX): never run
#endif
}

// Alternative `wgmma_tma`: the same kernel fed by TMA, the tensor maps after the op's arguments (x's, then w's).
// Launch: as linear_skinny_wgmma_fwd with 1024 more bytes of dynamic shared memory (the stages' mbarriers).
template <typename T, int WG, int MT, int XN, int SPLIT_K, int STAGES>
__global__ void __launch_bounds__(128 * WG, 1)
    linear_skinny_wgmma_tma_fwd(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w,
                                float* __restrict__ scratch, int M, int N, int K, int max_split_k,
                                const __grid_constant__ ktune::dev::gemm_ws::TensorMap x_map,
                                const __grid_constant__ ktune::dev::gemm_ws::TensorMap w_map) {
    static_assert(STAGES * (64 * WG * MT + XN) * 128 + 2048 <= 232448,
                  "linear_skinny wgmma_tma: more than 227 KiB of shared memory");
    static_assert(XN == 8 || XN == 16 || XN == 32 || XN == 64, "linear_skinny wgmma_tma: XN is 8, 16, 32 or 64");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    namespace sw = ktune::dev::linear_skinny_wgmma;
    sw::skinny_wgmma_path<sw::Feed::tma, T, WG, MT, XN, SPLIT_K, STAGES, 0>(y, x, w, nullptr, scratch, M, N, K,
                                                                           max_split_k, &x_map, &w_map);
#elif defined(__CUDA_ARCH__)
    __trap();  // a device pass without wgmma / TMA: never run
#endif
}

// gemm_act's small-M wgmma alternative (`skinny_wgmma` of search_spaces/gemm_act_*.yaml): this kernel fed by TMA, the
// bias and ACT (1 gelu tanh, 2 silu, 0 none) fused, and k split over a cluster of CLUSTER_K blocks (1, 2, 4) whose
// partials meet in shared memory, since gemm_act has no scratch: the blocks a K-heavy problem needs at M <= 64 (N /
// 64 tiles alone leave most SMs idle). The op's arguments, then the tensor maps (x's, then w's). Launch: grid
// (ceil_div(N, 64 * WG * MT), CLUSTER_K) in clusters (1, CLUSTER_K, 1), block 128 * WG, dynamic shared memory
// STAGES * (64 * WG * MT + XN) * 128 + 2048 bytes.
template <typename T, int WG, int MT, int XN, int CLUSTER_K, int STAGES, int ACT>
__global__ void __cluster_dims__(1, CLUSTER_K, 1) __launch_bounds__(128 * WG, 1)
    gemm_act_skinny_wgmma(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w,
                          const T* __restrict__ b, int M, int N, int K,
                          const __grid_constant__ ktune::dev::gemm_ws::TensorMap x_map,
                          const __grid_constant__ ktune::dev::gemm_ws::TensorMap w_map) {
    static_assert(STAGES * (64 * WG * MT + XN) * 128 + 2048 <= 232448,
                  "gemm_act skinny_wgmma: more than 227 KiB of shared memory");
    static_assert(XN == 8 || XN == 16 || XN == 32 || XN == 64, "gemm_act skinny_wgmma: XN is 8, 16, 32 or 64");
    static_assert(CLUSTER_K == 1 || CLUSTER_K == 2 || CLUSTER_K == 4, "gemm_act skinny_wgmma: CLUSTER_K is 1, 2 or 4");
    // Repeated outside the sm_90a pass (the path asserts it too), so that every target refuses what the space refuses.
    static_assert((CLUSTER_K - 1) * 256 * WG * MT * XN <= STAGES * (64 * WG * MT + XN) * 128,
                  "gemm_act skinny_wgmma: the cluster's partials fit in the stages");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    namespace sw = ktune::dev::linear_skinny_wgmma;
    sw::skinny_wgmma_path<sw::Feed::tma, T, WG, MT, XN, 1, STAGES, ACT, CLUSTER_K>(y, x, w, b, nullptr, M, N, K, 1,
                                                                                  &x_map, &w_map);
#elif defined(__CUDA_ARCH__)
    __trap();  // a device pass without wgmma / TMA: never run
#endif
}
