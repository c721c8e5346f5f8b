#pragma once
// Hopper GEMM with a fused epilogue: warpgroup MMA (wgmma) from shared memory, a cp.async multi-stage pipeline.
// Needs the arch-specific target sm_90a (the search spaces set kernel.arch_specific). A device pass for any other
// target (nvcc -arch=sm_90a also emits compute_90 PTX) compiles the kernels to a trap.
//
//   gemm_act_wgmma:  y[m, n] = act(sum_k x[m, k] w[n, k] + b[n])     x [M, K], w [N, K] (F.linear), b [N] or null
//   ffn_gated_wgmma: y[m, i] = act(sum_k x[m, k] w[i, k]) * sum_k x[m, k] w[I + i, k]      w [2I, K]: gate, then up
//
// Row-major everything, fp32 accumulation, one rounding to T (__nv_bfloat16 or __half). Any M, N (I); K % 8 == 0
// (16-byte copies of whole 8-element chunks; the op specs check it), pointers 16-byte aligned.
//
// Tiling: a block computes a BM x BN tile of y, BM = 64 * WG * MT: WG warpgroups (128 threads each), each owning MT
// slabs of 64 rows, every slab one wgmma m64nBNk16 per 16 of K (ffn_gated: two, gate and up, into two accumulators).
// K is walked in tiles of 64 (128 bytes of bf16/fp16 per row: exactly one 128-byte swizzle row). Per stage, shared
// memory holds A (BM rows) then B (BN rows; ffn_gated: BN gate rows then BN up rows), each row 128 bytes, 16-byte chunk
// c of row r stored at chunk c ^ (r % 8): the 128-byte swizzle that wgmma's descriptors name (8-row atoms of 1024
// bytes, so every operand starts 1024-byte aligned).
//
// Pipeline (every thread loads and computes; no warp specialization): STAGES stages, tiles prefetched STAGES - 2
// ahead, so that one wgmma group (tile kt - 1) may still read its stage while tile kt + STAGES - 2 is loaded into the
// stage of tile kt - 2, which every warpgroup has finished (wgmma.wait_group 1 before the barrier).
//
// Launch: block (128 * WG), grid (ceil_div(M, BM) * ceil_div(N, BN)) in one dimension, dynamic shared memory
// STAGES * (BM + BN * (GATED ? 2 : 1)) * 128 + 1024 bytes (1024 for aligning the base). Blocks are rastered in groups
// of GROUP_M row tiles: consecutive blocks share the weight tiles of one column while it is in L2.
#include "kernels/common/ktune_device.cuh"
#include "kernels/gemm/gemm_types.cuh"
#include "kernels/gemm/wgmma_ops.cuh"

namespace ktune::dev::gemm {

constexpr int kBK = 64;          // K per tile: 64 elements of 2 bytes, one 128-byte swizzle row
constexpr int kRowBytes = 128;   // bytes of one tile row in shared memory
constexpr int kAtomBytes = 1024; // 8 rows: one swizzle atom, the descriptors' stride between 8-row groups

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// A K-major operand with the 128-byte swizzle: start address, leading byte offset (unused for swizzled K-major, 1 by
// convention), stride byte offset 1024 (from one 8-row group to the next), swizzle mode 1 (128 bytes) in bits 62-63.
// The start must be in a 1024-byte-aligned atom (base offset 0); stepping K by 16 elements adds 32 bytes to it.
__device__ __forceinline__ unsigned long long smem_desc(unsigned addr) {
    unsigned long long d = 0;
    d |= static_cast<unsigned long long>((addr & 0x3FFFF) >> 4);
    d |= static_cast<unsigned long long>(1) << 16;
    d |= static_cast<unsigned long long>(kAtomBytes >> 4) << 32;
    d |= static_cast<unsigned long long>(1) << 62;
    return d;
}

__device__ __forceinline__ void cp_async_16(unsigned dst, const void* src, bool valid) {
    // src-size 0 zero-fills the 16 bytes without reading: rows past M / N and K past the end.
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}
// cp.async writes through the generic proxy; wgmma reads through the async proxy: order them.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int PENDING>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}
// Two adjacent outputs rounded to T and stored as one 4-byte access (the address is 4-byte aligned).
template <typename T>
struct Vec2Store;
template <>
struct Vec2Store<__nv_bfloat16> {
    static __device__ __forceinline__ void store(__nv_bfloat16* p, float a, float b) {
        *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(a, b);
    }
};
template <>
struct Vec2Store<__half> {
    static __device__ __forceinline__ void store(__half* p, float a, float b) {
        *reinterpret_cast<__half2*>(p) = __floats2half2_rn(a, b);
    }
};

// Keeps the compiler from moving accumulator registers across the asynchronous MMAs.
template <int N>
__device__ __forceinline__ void fence_operands(float (&d)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Copies ROWS rows x 64 K-elements starting at global row `row0` (rows >= row_end zero) and column k0 into a swizzled
// shared tile at `dst`. src_row(r) is the global row r of the operand's matrix, ld its row length K.
template <typename T, int ROWS, int THREADS>
__device__ __forceinline__ void load_tile(unsigned dst, const T* __restrict__ src, long long row0, long long row_end,
                                          int k0, int K) {
    constexpr int chunks = ROWS * (kRowBytes / 16);
#pragma unroll
    for (int i = 0; i < (chunks + THREADS - 1) / THREADS; ++i) {
        const int idx = threadIdx.x + i * THREADS;
        if (chunks % THREADS == 0 || idx < chunks) {
            const int r = idx >> 3, c = idx & 7;
            const long long row = row0 + r;
            const int k = k0 + c * 8;
            const bool valid = row < row_end && k < K;
            const T* p = valid ? src + row * K + k : src;
            cp_async_16(dst + r * kRowBytes + ((c ^ (r & 7)) << 4), p, valid);
        }
    }
}

// The configuration's static limits, checked by every compile pass: the body below is compiled only where wgmma
// exists (sm_90a), and a configuration the YAML forbids must fail to compile wherever it is compiled.
template <bool GATED, int WG, int MT, int BN, int STAGES>
__host__ __device__ constexpr bool gemm_wgmma_config_ok() {
    constexpr int BM = 64 * WG * MT;
    constexpr int B_ROWS = GATED ? 2 * BN : BN;
    constexpr int STAGE_BYTES = (BM + B_ROWS) * kRowBytes;
    constexpr int ACC = BN / 2;
    static_assert(BN % 64 == 0 && BN <= 256, "wgmma n of 64, 128, 192 or 256");
    static_assert(STAGES >= 3, "tiles are prefetched STAGES - 2 ahead");
    static_assert(MT * ACC * (GATED ? 2 : 1) <= 128, "accumulators beyond the register budget");
    static_assert(STAGES * STAGE_BYTES + 1024 <= 232448, "more than 227 KiB of shared memory");
    return true;
}

template <typename T, Act ACT, bool GATED, int WG, int MT, int BN, int STAGES, int GROUP_M>
__device__ __forceinline__ void gemm_wgmma_body(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w,
                                                const T* __restrict__ b, int M, int N, int K) {
    constexpr int THREADS = 128 * WG;
    constexpr int BM = 64 * WG * MT;
    constexpr int B_ROWS = GATED ? 2 * BN : BN;
    constexpr int A_BYTES = BM * kRowBytes;
    constexpr int STAGE_BYTES = (BM + B_ROWS) * kRowBytes;
    constexpr int ACC = BN / 2;  // fp32 accumulators per thread of one m64 x BN slab

    extern __shared__ unsigned char smem_raw[];
    const unsigned smem = (smem_addr(smem_raw) + 1023u) & ~1023u;

    // Block order: GROUP_M row tiles walk one column tile after another, so their blocks reuse its weight tile in L2.
    const int tiles_m = (M + BM - 1) / BM;
    const int tiles_n = (N + BN - 1) / BN;
    const int pid = blockIdx.x;
    const int per_group = GROUP_M * tiles_n;
    const int first_m = (pid / per_group) * GROUP_M;
    const int group_rows = min(tiles_m - first_m, GROUP_M);
    const int tile_m = first_m + (pid % per_group) % group_rows;
    const int tile_n = (pid % per_group) / group_rows;
    const long long m0 = (long long)tile_m * BM;
    const long long n0 = (long long)tile_n * BN;

    const int k_tiles = (K + kBK - 1) / kBK;
    auto load_stage = [&](int kt) {
        const unsigned base = smem + (kt % STAGES) * STAGE_BYTES;
        const int k0 = kt * kBK;
        load_tile<T, BM, THREADS>(base, x, m0, M, k0, K);
        load_tile<T, BN, THREADS>(base + A_BYTES, w, n0, N, k0, K);
        // Up rows I + n: the same tile of columns of the second half of w, its rows valid while n < I (= N).
        if constexpr (GATED) load_tile<T, BN, THREADS>(base + A_BYTES + BN * kRowBytes, w + (long long)N * K, n0, N, k0, K);
    };

    float acc[MT][ACC];
    float acc_up[GATED ? MT : 1][GATED ? ACC : 1];
#pragma unroll
    for (int t = 0; t < MT; ++t)
#pragma unroll
        for (int i = 0; i < ACC; ++i) acc[t][i] = 0.0f;
    if constexpr (GATED) {
#pragma unroll
        for (int t = 0; t < MT; ++t)
#pragma unroll
            for (int i = 0; i < ACC; ++i) acc_up[t][i] = 0.0f;
    }

    constexpr int AHEAD = STAGES - 2;
#pragma unroll
    for (int s = 0; s < AHEAD; ++s) {
        if (s < k_tiles) load_stage(s);
        cp_async_commit();  // an empty group past the end keeps the count of groups per tile fixed
    }
    const int wg = threadIdx.x / 128;
    for (int kt = 0; kt < k_tiles; ++kt) {
        cp_async_wait<AHEAD - 1>();  // this thread's copies of tile kt have landed
        fence_proxy_async();
        __syncthreads();  // everyone's have; every warpgroup is done with tile kt - 2's stage
        if (kt + AHEAD < k_tiles) load_stage(kt + AHEAD);
        cp_async_commit();

        const unsigned a_base = smem + (kt % STAGES) * STAGE_BYTES + wg * MT * 64 * kRowBytes;
        const unsigned b_base = smem + (kt % STAGES) * STAGE_BYTES + A_BYTES;
#pragma unroll
        for (int t = 0; t < MT; ++t) fence_operands(acc[t]);
        if constexpr (GATED) {
#pragma unroll
            for (int t = 0; t < MT; ++t) fence_operands(acc_up[t]);
        }
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < kBK / 16; ++ks) {
            const unsigned long long db = smem_desc(b_base + ks * 32);
#pragma unroll
            for (int t = 0; t < MT; ++t) {
                const unsigned long long da = smem_desc(a_base + t * 64 * kRowBytes + ks * 32);
                Wgmma<T, BN>::mma(acc[t], da, db);
                if constexpr (GATED) Wgmma<T, BN>::mma(acc_up[t], da, smem_desc(b_base + BN * kRowBytes + ks * 32));
            }
        }
        wgmma_commit();
        wgmma_wait<1>();
#pragma unroll
        for (int t = 0; t < MT; ++t) fence_operands(acc[t]);
        if constexpr (GATED) {
#pragma unroll
            for (int t = 0; t < MT; ++t) fence_operands(acc_up[t]);
        }
    }
    wgmma_wait<0>();
    cp_async_wait<0>();  // no copy may outlive the block (the trailing groups are empty)
#pragma unroll
    for (int t = 0; t < MT; ++t) fence_operands(acc[t]);
    if constexpr (GATED) {
#pragma unroll
        for (int t = 0; t < MT; ++t) fence_operands(acc_up[t]);
    }

    // Epilogue on the fragments. Thread l of warp v of the warpgroup holds, per 8-column group j of its m64 slab,
    // rows v * 16 + l / 4 (+ 8) and columns 8 j + 2 (l % 4) (+ 1): acc[4 j + 0..1] the first row, [4 j + 2..3] the
    // second. Pairs are stored as one 4-byte access where both columns exist and N is even (aligned).
    const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) & 3;
    const bool pairs = (N & 1) == 0;
#pragma unroll
    for (int t = 0; t < MT; ++t) {
        const long long slab_row = m0 + (wg * MT + t) * 64 + warp * 16 + lane / 4;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
            const long long col = n0 + j * 8 + 2 * (lane % 4);
            float bias0 = 0.0f, bias1 = 0.0f;
            if constexpr (!GATED) {
                if (b != nullptr) {
                    if (col < N) bias0 = to_float(b[col]);
                    if (col + 1 < N) bias1 = to_float(b[col + 1]);
                }
            }
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const long long row = slab_row + 8 * h;
                if (row >= M || col >= N) continue;
                float v0, v1;
                if constexpr (GATED) {
                    v0 = activate<ACT, T>(acc[t][4 * j + 2 * h]) * acc_up[t][4 * j + 2 * h];
                    v1 = activate<ACT, T>(acc[t][4 * j + 2 * h + 1]) * acc_up[t][4 * j + 2 * h + 1];
                } else {
                    v0 = activate<ACT, T>(acc[t][4 * j + 2 * h] + bias0);
                    v1 = activate<ACT, T>(acc[t][4 * j + 2 * h + 1] + bias1);
                }
                T* out = y + row * N + col;
                if (pairs && col + 1 < N) {
                    Vec2Store<T>::store(out, v0, v1);
                } else {
                    out[0] = from_float<T>(v0);
                    if (col + 1 < N) out[1] = from_float<T>(v1);
                }
            }
        }
    }
}

}  // namespace ktune::dev::gemm

template <typename T, ktune::dev::gemm::Act ACT, int WG, int MT, int BN, int STAGES, int GROUP_M>
__global__ void __launch_bounds__(128 * WG, 1)
    gemm_act_wgmma(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b, int M,
                   int N, int K) {
    static_assert(ktune::dev::gemm::gemm_wgmma_config_ok<false, WG, MT, BN, STAGES>());
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    ktune::dev::gemm::gemm_wgmma_body<T, ACT, false, WG, MT, BN, STAGES, GROUP_M>(y, x, w, b, M, N, K);
#elif defined(__CUDA_ARCH__)
    __trap();  // a device pass without wgmma (nvcc -arch=sm_90a also emits compute_90 PTX): never run
#endif
}

template <typename T, ktune::dev::gemm::Act ACT, int WG, int MT, int BN, int STAGES, int GROUP_M>
__global__ void __launch_bounds__(128 * WG, 1)
    ffn_gated_wgmma(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w, int M, int I, int K) {
    static_assert(ktune::dev::gemm::gemm_wgmma_config_ok<true, WG, MT, BN, STAGES>());
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    ktune::dev::gemm::gemm_wgmma_body<T, ACT, true, WG, MT, BN, STAGES, GROUP_M>(y, x, w, nullptr, M, I, K);
#elif defined(__CUDA_ARCH__)
    __trap();  // a device pass without wgmma (nvcc -arch=sm_90a also emits compute_90 PTX): never run
#endif
}
