#pragma once
// Hopper GEMM with a fused epilogue, warp-specialized: one producer warpgroup streams K tiles into shared memory while
// two consumer warpgroups run wgmma on them; mbarriers hand the stages back and forth. The producer copies with
// cp.async (gemm_act_wgmma_ws, ffn_gated_wgmma_ws) or has one thread issue TMA copies through tensor maps the host
// encoded (gemm_act_wgmma_tma, ffn_gated_wgmma_tma: the space's kernel.tensor_maps, 128-byte swizzle, boxes of the
// whole tile: [BM, 64] of x, [BN, 64] of w). The same
// operations, operand layout (128-byte swizzle), descriptors and fragment layout as kernels/gemm/gemm_wgmma.cuh (the
// validated kernel, kept as its own alternative); needs sm_90a (the spaces set kernel.arch_specific).
//
//   gemm_act_wgmma_ws:  y[m, n] = act(sum_k x[m, k] w[n, k] + b[n])     x [M, K], w [N, K] (F.linear), b [N] or null
//   ffn_gated_wgmma_ws: y[m, i] = act(sum_k x[m, k] w[i, k]) * sum_k x[m, k] w[I + i, k]      w [2I, K]: gate, up
//
// Row-major everything, fp32 accumulation, one rounding to T (__nv_bfloat16 or __half). Any M, N (I); K % 8 == 0,
// pointers 16-byte aligned (the op specs check K).
//
// Block: 384 threads, warpgroup 0 the producer, warpgroups 1 and 2 the consumers. setmaxnreg moves registers from the
// producer (56 each) to the consumers (224 each): 56 * 128 + 224 * 256 = 64512 of the SM's 65536. The block tile is
// BM x BN with BM = 2 * 64 * MT: consumer c owns rows c * 64 * MT.. (MT slabs of 64 rows, one wgmma m64nBNk16 per
// slab per 16 of K; ffn_gated: one m64n(2 BN)k16 over the stage's gate rows and the up rows after them).
//
// Pipeline: STAGES stages of one 64-wide K tile (A: BM rows, B: BN rows, ffn_gated 2 BN: gate rows then up rows; each
// row 128 bytes, swizzled as in gemm_wgmma.cuh, which is the layout TMA's 128-byte swizzle writes). Per stage two
// mbarriers:
//   full[s]:  cp.async: 128 arrivals, one per producer thread, made by cp.async.mbarrier.arrive.noinc when all of
//             that thread's earlier copies have landed; TMA: one arrival that expects the stage's bytes, which the
//             copies complete. Either way the phase completes when the whole tile is in shared memory (TMA writes
//             rows past M, N and K as zeros, as the cp.async zero-fill does).
//   empty[s]: 8 arrivals (pingpong: 4, one consumer reads a stage), lane 0 of each consumer warp once its wgmma
//             reading the stage have completed.
// Fill j (j = kt / STAGES) of stage s completes phase j of full[s]; its consumers wait on parity j & 1. Fill j >= 1
// waits for release j - 1 (phase j - 1 of empty[s], parity (j - 1) & 1). Neither side can run a whole phase ahead of
// the other, so one parity bit names the phase unambiguously (pingpong: the order barriers keep it so, see
// gemm_ws_body).
// Consumers keep one wgmma group in flight: tile kt's wgmma are issued before waiting for tile kt - 1's
// (wgmma.wait_group 1), whose stage is then released.
//
// Epilogue: after both consumers have finished their MMAs (named barrier), each writes its rows, activated and rounded
// to T, into shared memory (the pipeline's, now idle; rows padded by 16 bytes against bank conflicts), then stores
// them as coalesced 16-byte rows (element stores where N % 8 != 0 or at the right edge).
//
// Launch: block 384, grid ceil_div(M, BM) * ceil_div(N, BN) (1D, rastered in groups of GROUP_M row tiles as
// gemm_wgmma.cuh), dynamic shared memory STAGES * (BM + B_ROWS) * 128 + 1024 (alignment) + 1024 (barriers); the TMA
// kernels: grid ceil_div(tiles, TPB) (TPB 0: min(tiles, SMs)), TPB != 1 adding the consumers' output staging,
// 2 * 64 MT * BN * 2 bytes, or 32 KiB for a ring of panels where that would not fit (staging_bytes); the _pair
// kernels: clusters of two blocks, the grid even (gemm_ws_body's CLUSTER).
// PINGPONG (gemm_ws_body): the consumers take turns over a block's tiles of BM = 64 MT rows instead of sharing
// tiles of 128 MT.
#include "kernels/common/ktune_device.cuh"
#include "kernels/gemm/gemm_types.cuh"
#include "kernels/gemm/wgmma_ops.cuh"

namespace ktune::dev::gemm_ws {

using ktune::dev::gemm::Act;
using ktune::dev::gemm::activate;
using ktune::dev::gemm::Wgmma;

constexpr int kBK = 64;          // K per tile: 64 elements of 2 bytes, one 128-byte swizzle row
constexpr int kRowBytes = 128;   // bytes of one tile row in shared memory
constexpr int kAtomBytes = 1024; // 8 rows: one swizzle atom, the descriptors' stride between 8-row groups
constexpr int kProducerRegs = 56;
constexpr int kConsumerRegs = 224;

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// K-major operand, 128-byte swizzle (as gemm_wgmma.cuh): start, leading byte offset 1 (unused), stride 1024, mode 1.
// The low word holds the start (address >> 4, 14 bits) and the leading byte offset, the high word the stride and the
// mode. Shared addresses stay below 256 KiB, so the descriptor `off` bytes further is the low word plus off >> 4: the
// mainloop adds offsets to one low word instead of building each descriptor.
constexpr unsigned kDescHi = (kAtomBytes >> 4) | (1u << 30);
__device__ __forceinline__ unsigned smem_desc_lo(unsigned addr) { return ((addr & 0x3FFFF) >> 4) | (1u << 16); }
__device__ __forceinline__ unsigned long long desc_of(unsigned lo) {
    return (static_cast<unsigned long long>(kDescHi) << 32) | lo;
}
__device__ __forceinline__ unsigned long long smem_desc(unsigned addr) { return desc_of(smem_desc_lo(addr)); }

__device__ __forceinline__ void cp_async_16(unsigned dst, const void* src, bool valid) {
    // src-size 0 zero-fills the 16 bytes without reading: rows past M / N and K past the end.
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Arrives on `bar` once all of this thread's earlier cp.async have completed; noinc: the arrival is one of the
// barrier's expected count (no pending count is added for it).
__device__ __forceinline__ void cp_async_arrive_noinc(unsigned bar) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
    asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(bar) : "memory");
}
// `count` arrivals at once: one thread standing for several that would arrive together.
__device__ __forceinline__ void mbar_arrive(unsigned bar, unsigned count) {
    asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0], %1;\n}\n" ::"r"(bar), "r"(count)
                 : "memory");
}
// Blocks until the phase of parity `parity` of `bar` has completed (acquire at CTA scope, the default).
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
    asm volatile(
        "{\n.reg .pred done;\n"
        "WAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT_%=;\n}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
}
// cp.async writes through the generic proxy; wgmma reads through the async proxy: order them (after the wait).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int PENDING>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}
// Named barrier `id` over `threads` threads (id 0 is __syncthreads').
__device__ __forceinline__ void named_sync(int id, int threads) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// Arrives on named barrier `id` without waiting (the threads that bar.sync on it wait for these arrivals too).
__device__ __forceinline__ void named_arrive(int id, int threads) {
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
template <int N>
__device__ __forceinline__ void fence_operands(float (&d)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// A CUtensorMap's 128 bytes: taken by value (__grid_constant__), its parameter-space address handed to TMA.
struct alignas(64) TensorMap {
    unsigned long long opaque[16];
};
__device__ __forceinline__ void prefetch_tensor_map(const TensorMap& map) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(&map)) : "memory");
}
// One arrival on `bar` that also expects `bytes` more to be completed by asynchronous copies.
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// The box of `map` at (row, k) into shared memory at dst; completes its bytes on `bar`.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const TensorMap& map, int k, int row, unsigned bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
            dst),
        "l"(reinterpret_cast<unsigned long long>(&map)), "r"(k), "r"(row), "r"(bar)
        : "memory");
}

// tma_load_2d into the same shared-memory offset of every CTA of the cluster in `mask` (bit r: rank r), completing
// the bytes on the mbarrier at `bar`'s offset in each.
__device__ __forceinline__ void tma_load_2d_multicast(unsigned dst, const TensorMap& map, int k, int row, unsigned bar,
                                                      unsigned short mask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
        "[%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(&map)), "r"(k), "r"(row), "r"(bar), "h"(mask)
        : "memory");
}
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}
// Every thread of every CTA of the cluster: what each wrote before (its mbarrier inits) is seen by all after.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// One arrival on the mbarrier at `bar`'s offset in the shared memory of cluster CTA `rank`. Release at CTA scope
// (the default), as CUTLASS's ClusterBarrier arrives: what it orders is this thread's completed wgmma reads of the
// stage, and a cluster-scope release would wait for every earlier memory operation of the thread.
__device__ __forceinline__ void mbar_arrive_cluster(unsigned bar, unsigned rank) {
    asm volatile(
        "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(bar),
        "r"(rank)
        : "memory");
}

// The box of a four-dimensional `map` at (c0, c1, c2, c3), innermost first (prefill attention's [B, L, H, D] views).
__device__ __forceinline__ void tma_load_4d(unsigned dst, const TensorMap& map, int c0, int c1, int c2, int c3,
                                            unsigned bar) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
        "[%6];\n" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(&map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
        : "memory");
}

// The box of `map` at (col, row) from shared memory at src; completes in this thread's bulk async-group.
__device__ __forceinline__ void tma_store_2d(const TensorMap& map, int col, int row, unsigned src) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                     reinterpret_cast<unsigned long long>(&map)),
                 "r"(col), "r"(row), "r"(src)
                 : "memory");
}
// The box of a four-dimensional `map` at (c0, c1, c2, c3) from shared memory at src; this thread's bulk async-group.
__device__ __forceinline__ void tma_store_4d(const TensorMap& map, int c0, int c1, int c2, int c3, unsigned src) {
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%1, %2, %3, %4}], [%5];\n" ::"l"(
                     reinterpret_cast<unsigned long long>(&map)),
                 "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(src)
                 : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Until this thread's bulk stores have read their shared memory (READ) or completed.
template <bool READ>
__device__ __forceinline__ void bulk_wait_all() {
    if constexpr (READ)
        asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
    else
        asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}
// Until all but this thread's NEWEST bulk groups have read their shared memory.
template <int NEWEST>
__device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(NEWEST) : "memory");
}

template <typename T>
__device__ __forceinline__ unsigned pack2(float a, float b);
template <>
__device__ __forceinline__ unsigned pack2<__nv_bfloat16>(float a, float b) {
    __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<unsigned*>(&v);
}
template <>
__device__ __forceinline__ unsigned pack2<__half>(float a, float b) {
    __half2 v = __floats2half2_rn(a, b);
    return *reinterpret_cast<unsigned*>(&v);
}

// The producer warpgroup's share of one tile: ROWS rows x 64 K-elements from global row row0 (rows >= row_end and
// K past the end zero-filled), column k0, into the swizzled tile at dst. Thread tid copies chunk tid % 8 of rows
// tid / 8 + 16 i: its swizzled chunk (the row's low 3 bits are fixed) and source step stay the same for every i, so
// the loop is a pointer walk (the producer runs on 56 registers).
template <typename T, int ROWS>
__device__ __forceinline__ void load_tile(unsigned dst, const T* __restrict__ src, long long row0, long long row_end,
                                          int k0, int K, int tid) {
    static_assert(ROWS % 16 == 0, "whole steps of 16 rows (128 threads x 16 bytes)");
    const int r = tid >> 3, c = tid & 7;
    const int k = k0 + c * 8;
    const unsigned d = dst + r * kRowBytes + ((c ^ (r & 7)) << 4);
    const long long rows_left = row_end - row0 - r;  // this thread's rows i with 16 i < rows_left exist
    const T* p = src + (row0 + r) * K + k;
    const long long step = 16LL * K;
#pragma unroll
    for (int i = 0; i < ROWS / 16; ++i) {
        const bool valid = 16 * i < rows_left && k < K;
        cp_async_16(d + i * 16 * kRowBytes, valid ? p : src, valid);
        p += step;
    }
}

constexpr int kSmemLimit = 232448;             // 227 KiB of shared memory a block
constexpr int kPanelBytes = 64 * kRowBytes;     // 64 rows of 64 outputs: one box of the y map (TMA stores)
constexpr int kRingPanels = 2;
// The consumers' output staging with several tiles a block (TPB != 1): each consumer's whole output tile (64 MT x BN)
// where that fits beside the stages, else a ring of two 64 x 64 panels each, written and stored one after the other,
// so that the large tiles keep a fourth stage (1 x 256: 48 KiB a stage, 64 KiB of whole staging).
__host__ __device__ constexpr int whole_staging_bytes(int mt, int bn) { return 2 * 64 * mt * bn * 2; }
__host__ __device__ constexpr bool staging_in_ring(int pipe_bytes, int mt, int bn) {
    return pipe_bytes + whole_staging_bytes(mt, bn) + 2048 > kSmemLimit;
}
__host__ __device__ constexpr int staging_bytes(int tpb, int pipe_bytes, int mt, int bn) {
    if (tpb == 1) return 0;
    return staging_in_ring(pipe_bytes, mt, bn) ? 2 * kRingPanels * kPanelBytes : whole_staging_bytes(mt, bn);
}

// The configuration's static limits, checked by every compile pass (the body is compiled only where wgmma exists, and
// a configuration the YAML forbids must fail to compile wherever it is compiled).
template <bool GATED, int MT, int BN, int STAGES, int TPB = 1, bool PINGPONG = false, int CLUSTER = 1>
__host__ __device__ constexpr bool gemm_ws_config_ok() {
    constexpr int BM = 64 * (PINGPONG ? 1 : 2) * MT;
    constexpr int B_ROWS = GATED ? 2 * BN : BN;
    constexpr int PIPE_BYTES = STAGES * (BM + B_ROWS) * kRowBytes;
    constexpr int ACC = BN / 2;
    constexpr int OUT_ROW_BYTES = BN * 2 + 16;
    static_assert(BN % 64 == 0 && BN <= 256, "wgmma n of 64, 128, 192 or 256");
    static_assert(STAGES >= 2, "a stage loading while another is computed");
    static_assert(MT * ACC * (GATED ? 2 : 1) <= 128, "accumulators beyond the consumers' 224 registers");
    constexpr int STAGING_BYTES = staging_bytes(TPB, PIPE_BYTES, MT, BN);  // the consumers' output staging
    static_assert(PIPE_BYTES + STAGING_BYTES + 2048 <= kSmemLimit, "more than 227 KiB of shared memory");
    static_assert(TPB >= 0, "TPB: tiles per block, 0 for one block per SM");
    static_assert(!PINGPONG || TPB != 1, "pingpong: the consumers take turns over a block's tiles");
    static_assert(CLUSTER == 1 || CLUSTER == 2, "pairs of blocks at most");
    static_assert(CLUSTER == 1 || TPB != 1, "a cluster's blocks take their tiles in step: several tiles a block");
    static_assert((GATED ? BN : BN / CLUSTER) % 8 == 0, "a block's part of the B tile: whole swizzle atoms");
    static_assert(BM * OUT_ROW_BYTES <= PIPE_BYTES, "the epilogue's staging fits in the pipeline's shared memory");
    return true;
}

// x_map, w_map: null for the cp.async producer; the TMA producer's tensor maps over x [M, K] and w [N or 2I, K].
// TPB (TMA only): output tiles per block, 0 for a grid of one block per SM (the launch's min(tiles, SMS)); the kernel
// takes any grid. Block b takes tiles b, b + gridDim.x, ...; its producer runs on into the next
// tile's stages while the consumers store the last one. Those write their outputs into a staging tile of their own
// (64 MT x BN, 64 x 64 boxes 128-byte swizzled, after the stages; or a ring of two such panels, each written once the
// store of the panel before the last has read it) and one thread per consumer hands it to TMA stores
// (the y map: rows past M and columns past N are not written), which run while the next tile's MMAs do. TPB 1: one
// tile, staged in the pipeline's shared memory (idle by then) and stored by every thread.
// PINGPONG (TPB != 1): the consumers take turns instead of sharing each tile. A tile is BM = 64 MT rows, a stage holds
// one tile's A and B; consumer c takes the block's tiles c, c + 2, ... and its epilogue runs while the other's MMAs
// do, so the tensor cores do not wait for it. A consumer starts a tile's MMAs once the other has waited for every
// stage of the tile before (the order barriers): stages then fill one phase ahead of any waiting consumer, as the
// parity waits need.
// CLUSTER 2 (TMA, TPB != 1): the blocks of a cluster pair take the two tiles one above the other (rank r the rows
// m0 + r BM) in step, so they share the B tile: each copies its part (ungated: BN / 2 rows, w_map's box; gated: the
// gate rows or the up rows) into both blocks' stage by one multicast, completing the bytes on both full barriers. A
// stage is then written by both producers, so it is free once both blocks' consumers released it: each consumer
// arrives on empty[s] in every block of the pair (twice the arrivals). The blocks start once both have initialised
// their barriers (a cluster barrier), and the producer stays until every release has arrived, so that none reaches
// a block that has exited. Where M has an odd number of tiles, rank 1's last tile lies past M: its loads read zeros
// and its stores write nothing.
template <typename T, Act ACT, bool GATED, int MT, int BN, int STAGES, int GROUP_M, bool TMA, int TPB,
          bool PINGPONG = false, int CLUSTER = 1>
__device__ __forceinline__ void gemm_ws_body(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w,
                                             const T* __restrict__ b, int M, int N, int K, const TensorMap* x_map,
                                             const TensorMap* w_map, const TensorMap* y_map) {
    constexpr int CONSUMERS = 2;
    static_assert(!PINGPONG || (TMA && TPB != 1), "pingpong: the TMA producer, several tiles a block");
    static_assert(CLUSTER == 1 || (TMA && TPB != 1), "clusters: the TMA producer, several tiles a block");
    constexpr int BM = 64 * (PINGPONG ? 1 : CONSUMERS) * MT;  // rows of a tile
    constexpr int B_ROWS = GATED ? 2 * BN : BN;
    constexpr int A_BYTES = BM * kRowBytes;
    constexpr int STAGE_BYTES = (BM + B_ROWS) * kRowBytes;
    constexpr int PIPE_BYTES = STAGES * STAGE_BYTES;
    constexpr int ACC = BN / 2;  // fp32 accumulators per thread of one m64 x BN slab
    constexpr int OUT_ROW_BYTES = BN * 2 + 16;  // epilogue staging row: 16 bytes of padding shift the banks

    extern __shared__ unsigned char smem_raw[];
    const unsigned smem = (smem_addr(smem_raw) + 1023u) & ~1023u;
    // TPB != 1: each consumer's output tile (64 MT x BN) by slab and panel, or its ring of panels (staging_bytes).
    constexpr bool RING = staging_in_ring(PIPE_BYTES, MT, BN);
    constexpr int STAGING_BYTES = staging_bytes(TPB, PIPE_BYTES, MT, BN);
    const unsigned staging = smem + PIPE_BYTES;
    // full[s] at bars + 8 s, empty[s] at bars + 8 (STAGES + s), pingpong's order[c] at bars + 8 (2 STAGES + c).
    const unsigned bars = staging + STAGING_BYTES;
    auto full_bar = [&](int s) { return bars + 8u * s; };
    auto empty_bar = [&](int s) { return bars + 8u * (STAGES + s); };
    auto order_bar = [&](int c) { return bars + 8u * (2 * STAGES + c); };

    // Broadcast from lane 0 so the compiler sees the role warp-uniform (the setmaxnreg branches must be).
    const int wg = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);
    const int tid = threadIdx.x % 128;
    const unsigned rank = CLUSTER > 1 ? cluster_rank() : 0;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full_bar(s), TMA ? 1 : 128);
            // Lane 0 of each warp that reads the stage, in each block of the cluster.
            mbar_init(empty_bar(s), (PINGPONG ? 1 : CONSUMERS) * 4 * CLUSTER);
        }
        if constexpr (PINGPONG) {
            for (int c = 0; c < CONSUMERS; ++c) mbar_init(order_bar(c), 4);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    if constexpr (CLUSTER > 1)
        cluster_sync();  // the other block's copies and arrivals reach barriers initialised
    else
        __syncthreads();

    static_assert(TPB == 1 || TMA, "tiles per block: the TMA producer");
    // Tile order: GROUP_M row tiles walk one column tile after another, so their blocks reuse its weight tile in L2.
    // A cluster takes CLUSTER row tiles one above the other at once: `tiles` counts those, in rows of CLUSTER BM.
    const int tiles_m = (M + BM * CLUSTER - 1) / (BM * CLUSTER);
    const int tiles_n = (N + BN - 1) / BN;
    const int tiles = tiles_m * tiles_n;
    const auto tile_origin = [&](int tile, long long& m0, long long& n0) {
        const int per_group = GROUP_M * tiles_n;
        const int first_m = (tile / per_group) * GROUP_M;
        const int group_rows = min(tiles_m - first_m, GROUP_M);
        m0 = (long long)(first_m + (tile % per_group) % group_rows) * BM * CLUSTER + rank * BM;
        n0 = (long long)((tile % per_group) / group_rows) * BN;
    };
    // This block's (cluster's) first tile and its step over them.
    const int first_tile = blockIdx.x / CLUSTER, tile_step = gridDim.x / CLUSTER;
    long long m0, n0;
    tile_origin(first_tile, m0, n0);
    const int k_tiles = (K + kBK - 1) / kBK;

    if (wg == 0) {
        // Producer.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
        if constexpr (TMA) {
            if (tid != 0) return;
            prefetch_tensor_map(*x_map);
            prefetch_tensor_map(*w_map);
            int fill = 0;  // this block's stage fills so far, over its tiles
            for (int tile = first_tile; tile < tiles; tile += tile_step) {
                tile_origin(tile, m0, n0);
                for (int kt = 0; kt < k_tiles; ++kt, ++fill) {
                    const int s = fill % STAGES;
                    if (fill >= STAGES) mbar_wait(empty_bar(s), ((fill / STAGES) - 1) & 1);
                    const unsigned base = smem + s * STAGE_BYTES;
                    mbar_arrive_expect_tx(full_bar(s), STAGE_BYTES);  // the pair's B parts included
                    tma_load_2d(base, *x_map, kt * kBK, int(m0), full_bar(s));
                    if constexpr (CLUSTER > 1) {
                        // This block's part of B into both blocks: gated, rank 0 the gate rows n0.., rank 1 the up
                        // rows I + n0..; else BN / 2 rows each.
                        constexpr int PART_ROWS = B_ROWS / CLUSTER;
                        const int row = GATED ? int(rank) * N + int(n0) : int(n0) + int(rank) * PART_ROWS;
                        tma_load_2d_multicast(base + A_BYTES + rank * PART_ROWS * kRowBytes, *w_map, kt * kBK, row,
                                              full_bar(s), (1u << CLUSTER) - 1);
                    } else {
                        tma_load_2d(base + A_BYTES, *w_map, kt * kBK, int(n0), full_bar(s));
                        // Up rows I + n: the second half of w (gate rows past I read up rows: columns never stored).
                        if constexpr (GATED)
                            tma_load_2d(base + A_BYTES + BN * kRowBytes, *w_map, kt * kBK, N + int(n0), full_bar(s));
                    }
                }
            }
            if constexpr (CLUSTER > 1) {
                // The last release of each stage: both blocks' consumers are then done arriving on this block.
                for (int f = max(fill - STAGES, 0); f < fill; ++f) mbar_wait(empty_bar(f % STAGES), (f / STAGES) & 1);
            }
        } else {
            for (int kt = 0; kt < k_tiles; ++kt) {
                const int s = kt % STAGES;
                if (kt >= STAGES) mbar_wait(empty_bar(s), ((kt / STAGES) - 1) & 1);
                const unsigned base = smem + s * STAGE_BYTES;
                const int k0 = kt * kBK;
                load_tile<T, BM>(base, x, m0, M, k0, K, tid);
                load_tile<T, BN>(base + A_BYTES, w, n0, N, k0, K, tid);
                // Up rows I + n: the same columns of the second half of w, valid while n < I (= N).
                if constexpr (GATED)
                    load_tile<T, BN>(base + A_BYTES + BN * kRowBytes, w + (long long)N * K, n0, N, k0, K, tid);
                cp_async_arrive_noinc(full_bar(s));
            }
            // The consumers wait for every tile; waiting here too keeps no copy outliving its issuing thread.
            asm volatile("cp.async.wait_all;\n" ::: "memory");
        }
        return;
    }

    // Consumers.
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
    const int cw = wg - 1;  // consumer index
    const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) & 3;

    // Gated: the gate's columns, then the up's (one wgmma of n = 2 BN over the stage's gate and up rows, which lie
    // one after the other, reads the A tile once for both).
    constexpr int ACC_ALL = GATED ? 2 * ACC : ACC;
    float acc[MT][ACC_ALL] = {};  // zeroed again per tile; here for the front end, which cannot see that
    // The bias of columns 8 j + 2 (lane % 4) + 0, 1 of the tile (zeros without one, or gated): loaded once per j,
    // outside the loops over slabs and rows (the epilogue's shared-memory stores clobber memory for the compiler).
    const auto bias_pair = [&](int j, float& bias0, float& bias1) {
        const long long col = n0 + j * 8 + 2 * (lane % 4);
        bias0 = !GATED && b != nullptr && col < N ? to_float(b[col]) : 0.0f;
        bias1 = !GATED && b != nullptr && col + 1 < N ? to_float(b[col + 1]) : 0.0f;
    };
    // The output of fragment (t, j, h): rows t * 64 + 16 warp + lane / 4 + 8 h, columns 8 j + 2 (lane % 4) + 0, 1 of
    // the consumer's slabs, activated (gated: act(gate) * up; else act(z + bias)).
    const auto output_pair = [&](int t, int j, int h, float bias0, float bias1, float& v0, float& v1) {
        if constexpr (GATED) {
            v0 = activate<ACT, T>(acc[t][4 * j + 2 * h]) * acc[t][ACC + 4 * j + 2 * h];
            v1 = activate<ACT, T>(acc[t][4 * j + 2 * h + 1]) * acc[t][ACC + 4 * j + 2 * h + 1];
        } else {
            v0 = activate<ACT, T>(acc[t][4 * j + 2 * h] + bias0);
            v1 = activate<ACT, T>(acc[t][4 * j + 2 * h + 1] + bias1);
        }
    };
    // A stage back to the producers that fill it: this block's, and with clusters the other block's too.
    const auto release = [&](int s) {
        mbar_arrive(empty_bar(s));
        if constexpr (CLUSTER > 1) {
            for (unsigned r = 0; r < CLUSTER; ++r)
                if (r != rank) mbar_arrive_cluster(empty_bar(s), r);
        }
    };
    const unsigned desc_lo0 = smem_desc_lo(smem);  // the pipeline's start, as a descriptor's low word
    int fill = 0;        // the stage fills consumed so far, over this block's tiles
    int out_panels = 0;  // the panels this consumer has handed to stores (RING: which slot is next)
    constexpr int TURN = PINGPONG ? CONSUMERS : 1;  // this consumer's step over the block's tiles
    for (int nth = PINGPONG ? cw : 0, tile = first_tile + nth * tile_step; tile < tiles;
         nth += TURN, tile += TURN * tile_step) {
        tile_origin(tile, m0, n0);
        if constexpr (PINGPONG) {
            fill = nth * k_tiles;  // the fills of the block's earlier tiles, this consumer's and the other's
            // The other consumer has waited for every stage of the block's tile before this one.
            if (nth > 0) mbar_wait(order_bar(1 - cw), ((nth - 1) / 2) & 1);
        }
#pragma unroll
        for (int t = 0; t < MT; ++t)
#pragma unroll
            for (int i = 0; i < ACC_ALL; ++i) acc[t][i] = 0.0f;

        for (int kt = 0; kt < k_tiles; ++kt, ++fill) {
            const int s = fill % STAGES;
            mbar_wait(full_bar(s), (fill / STAGES) & 1);
            if constexpr (!TMA) fence_proxy_async();  // TMA writes through the async proxy already
            // The descriptors' low words (smem_desc_lo) at this stage's A rows (this consumer's) and B rows.
            const unsigned a_lo = desc_lo0 + (s * STAGE_BYTES + (PINGPONG ? 0 : cw * MT * 64 * kRowBytes)) / 16;
            const unsigned b_lo = desc_lo0 + (s * STAGE_BYTES + A_BYTES) / 16;
#pragma unroll
            for (int t = 0; t < MT; ++t) fence_operands(acc[t]);
            wgmma_fence();
#pragma unroll
            for (int ks = 0; ks < kBK / 16; ++ks) {
                const unsigned long long db = desc_of(b_lo + ks * 32 / 16);
#pragma unroll
                for (int t = 0; t < MT; ++t) {
                    const unsigned long long da = desc_of(a_lo + (t * 64 * kRowBytes + ks * 32) / 16);
                    Wgmma<T, GATED ? 2 * BN : BN>::mma(acc[t], da, db);
                }
            }
            wgmma_commit();
            wgmma_wait<1>();  // tile kt - 1's group has completed: its stage may be refilled
#pragma unroll
            for (int t = 0; t < MT; ++t) fence_operands(acc[t]);
            if (kt > 0 && lane == 0) release((fill - 1) % STAGES);
        }
        if (PINGPONG && lane == 0) mbar_arrive(order_bar(cw));  // the other consumer may start its next tile
        wgmma_wait<0>();
#pragma unroll
        for (int t = 0; t < MT; ++t) fence_operands(acc[t]);

        if constexpr (TPB != 1) {
            // The last stage back to the producer, already filling the next tile.
            if (lane == 0) release((fill - 1) % STAGES);
            // The panels (t, p) of slabs t0 <= t < t1, columns 64 p.., slab t's at base + (t - t0) t_stride: 64 rows of
            // 128 bytes, 16-byte chunk q of row r at q ^ (r % 8), the layout the y map's 128-byte swizzle reads
            // (bank-conflict free here). The bias is loaded once per column pair for all the slabs.
            const auto stage_panels = [&](int p, int t0, int t1, unsigned base, unsigned t_stride) {
#pragma unroll
                for (int q = 0; q < 8; ++q) {
                    float bias0, bias1;
                    bias_pair(8 * p + q, bias0, bias1);
#pragma unroll
                    for (int t = t0; t < t1; ++t) {
#pragma unroll
                        for (int h = 0; h < 2; ++h) {
                            const int r = warp * 16 + lane / 4 + 8 * h;
                            float v0, v1;
                            output_pair(t, 8 * p + q, h, bias0, bias1, v0, v1);
                            const unsigned at =
                                base + (t - t0) * t_stride + r * kRowBytes + ((q ^ (r % 8)) << 4) + 4 * (lane % 4);
                            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(at), "r"(pack2<T>(v0, v1)) : "memory");
                        }
                    }
                }
            };
            const auto store_panel = [&](int t, int p, unsigned panel) {
                tma_store_2d(*y_map, int(n0) + p * 64, int(m0) + ((PINGPONG ? 0 : cw * MT) + t) * 64, panel);
            };
            if constexpr (RING) {
                const unsigned its_ring = staging + cw * kRingPanels * kPanelBytes;
#pragma unroll
                for (int t = 0; t < MT; ++t)
#pragma unroll
                    for (int p = 0; p < BN / 64; ++p, ++out_panels) {
                        const unsigned panel = its_ring + (out_panels % kRingPanels) * kPanelBytes;
                        // The slot is free once the store that last used it has read it: all but the newest one.
                        if (tid == 0) bulk_wait_read<kRingPanels - 1>();
                        named_sync(2 + cw, 128);
                        stage_panels(p, t, t + 1, panel, 0);
                        fence_proxy_async();  // the generic proxy's writes, before TMA reads them
                        named_sync(2 + cw, 128);
                        if (tid == 0) {
                            store_panel(t, p, panel);
                            bulk_commit();
                        }
                    }
            } else {
                // Slab t, panel p at its_staging + (t * BN / 64 + p) * kPanelBytes; free once the previous tile's
                // stores have read it.
                const unsigned its_staging = staging + cw * MT * 64 * BN * 2;
                if (tid == 0) bulk_wait_all<true>();
                named_sync(2 + cw, 128);
#pragma unroll
                for (int p = 0; p < BN / 64; ++p)
                    stage_panels(p, 0, MT, its_staging + p * kPanelBytes, (BN / 64) * kPanelBytes);
                fence_proxy_async();
                named_sync(2 + cw, 128);
                if (tid == 0) {
#pragma unroll
                    for (int t = 0; t < MT; ++t)
#pragma unroll
                        for (int p = 0; p < BN / 64; ++p)
                            store_panel(t, p, its_staging + (t * (BN / 64) + p) * kPanelBytes);
                    bulk_commit();
                }
            }
            continue;
        }
        // Both consumers' MMAs are done with every stage (and every fill has landed: each was waited for) before the
        // pipeline's shared memory holds the output.
        named_sync(1, 128 * CONSUMERS);

        // Fragments to shared memory. Thread l of warp v holds, per 8-column group j of its m64 slab, rows v * 16 + l / 4
        // (+ 8) and columns 8 j + 2 (l % 4) (+ 1): acc[4 j + 0..1] the first row, [4 j + 2..3] the second.
        const unsigned out_base = smem + cw * MT * 64 * OUT_ROW_BYTES;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
            const int col = j * 8 + 2 * (lane % 4);
            float bias0, bias1;
            bias_pair(j, bias0, bias1);
#pragma unroll
            for (int t = 0; t < MT; ++t) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int row = t * 64 + warp * 16 + lane / 4 + 8 * h;
                    float v0, v1;
                    output_pair(t, j, h, bias0, bias1, v0, v1);
                    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(out_base + row * OUT_ROW_BYTES + col * 2),
                                 "r"(pack2<T>(v0, v1))
                                 : "memory");
                }
            }
        }
        named_sync(2 + cw, 128);  // this consumer's rows are staged

        // Coalesced stores of this consumer's MT * 64 rows: 16 bytes (8 outputs) per thread per step.
        constexpr int CHUNKS_PER_ROW = BN / 8;
        constexpr int CHUNKS = MT * 64 * CHUNKS_PER_ROW;
        static_assert(CHUNKS % 128 == 0, "whole steps of 128 threads");
        const bool vec_ok = (N % 8) == 0;
#pragma unroll 4
        for (int i = 0; i < CHUNKS / 128; ++i) {
            const int idx = tid + i * 128;
            const int r = idx / CHUNKS_PER_ROW, c = idx % CHUNKS_PER_ROW;
            const long long row = m0 + cw * MT * 64 + r;
            const long long col = n0 + c * 8;
            if (row >= M || col >= N) continue;
            unsigned v0, v1, v2, v3;
            asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                         : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3)
                         : "r"(out_base + r * OUT_ROW_BYTES + c * 16)
                         : "memory");
            T* out = y + row * N + col;
            if (vec_ok && col + 8 <= N) {
                *reinterpret_cast<uint4*>(out) = make_uint4(v0, v1, v2, v3);
            } else {
                const unsigned words[4] = {v0, v1, v2, v3};
#pragma unroll
                for (int e = 0; e < 8; ++e) {
                    if (col + e < N) {
                        const unsigned short bits = static_cast<unsigned short>(words[e / 2] >> (16 * (e % 2)));
                        out[e] = *reinterpret_cast<const T*>(&bits);
                    }
                }
            }
        }
    }  // this block's tiles
    // The staging tile stays until the last stores have read it, and the block until they completed.
    if constexpr (TPB != 1) {
        if (tid == 0) bulk_wait_all<false>();
    }
}

}  // namespace ktune::dev::gemm_ws

template <typename T, ktune::dev::gemm::Act ACT, int MT, int BN, int STAGES, int GROUP_M>
__global__ void __launch_bounds__(384, 1)
    gemm_act_wgmma_ws(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                      int M, int N, int K) {
    static_assert(ktune::dev::gemm_ws::gemm_ws_config_ok<false, MT, BN, STAGES>());
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    ktune::dev::gemm_ws::gemm_ws_body<T, ACT, false, MT, BN, STAGES, GROUP_M, false, 1>(y, x, w, b, M, N, K, nullptr,
                                                                                   nullptr, nullptr);
#elif defined(__CUDA_ARCH__)
    __trap();  // a device pass without wgmma / setmaxnreg (nvcc -arch=sm_90a also emits compute_90 PTX): never run
#endif
}

template <typename T, ktune::dev::gemm::Act ACT, int MT, int BN, int STAGES, int GROUP_M>
__global__ void __launch_bounds__(384, 1)
    ffn_gated_wgmma_ws(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w, int M, int I, int K) {
    static_assert(ktune::dev::gemm_ws::gemm_ws_config_ok<true, MT, BN, STAGES>());
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    ktune::dev::gemm_ws::gemm_ws_body<T, ACT, true, MT, BN, STAGES, GROUP_M, false, 1>(y, x, w, nullptr, M, I, K, nullptr,
                                                                                  nullptr, nullptr);
#elif defined(__CUDA_ARCH__)
    __trap();  // a device pass without wgmma / setmaxnreg (nvcc -arch=sm_90a also emits compute_90 PTX): never run
#endif
}

// The TMA kernels' entry, CLUSTER 1 (gemm_act_wgmma_tma, ffn_gated_wgmma_tma) or 2 (the _pair kernels: clusters of
// two blocks sharing the B tile, gemm_ws_body; the launch's grid even). Two kernels rather than one with the cluster
// as a template argument: a kernel declaring __cluster_dims__(1, 1, 1) ran up to 15 % slower than one declaring none
// (H200, the pingpong configurations; docs/performance.md).
template <typename T, ktune::dev::gemm::Act ACT, bool GATED, int MT, int BN, int STAGES, int GROUP_M, int TPB,
          int PINGPONG, int CLUSTER>
__device__ __forceinline__ void gemm_tma_entry(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w,
                                               const T* __restrict__ b, int M, int N, int K,
                                               const ktune::dev::gemm_ws::TensorMap& x_map,
                                               const ktune::dev::gemm_ws::TensorMap& w_map,
                                               const ktune::dev::gemm_ws::TensorMap& y_map) {
    static_assert(ktune::dev::gemm_ws::gemm_ws_config_ok<GATED, MT, BN, STAGES, TPB, PINGPONG != 0, CLUSTER>());
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    ktune::dev::gemm_ws::gemm_ws_body<T, ACT, GATED, MT, BN, STAGES, GROUP_M, true, TPB, PINGPONG != 0, CLUSTER>(
        y, x, w, b, M, N, K, &x_map, &w_map, &y_map);
#elif defined(__CUDA_ARCH__)
    __trap();  // a device pass without wgmma / setmaxnreg / TMA: never run
#endif
}

template <typename T, ktune::dev::gemm::Act ACT, int MT, int BN, int STAGES, int GROUP_M, int TPB, int PINGPONG>
__global__ void __launch_bounds__(384, 1)
    gemm_act_wgmma_tma(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                       int M, int N, int K, const __grid_constant__ ktune::dev::gemm_ws::TensorMap x_map,
                       const __grid_constant__ ktune::dev::gemm_ws::TensorMap w_map,
                       const __grid_constant__ ktune::dev::gemm_ws::TensorMap y_map) {
    gemm_tma_entry<T, ACT, false, MT, BN, STAGES, GROUP_M, TPB, PINGPONG, 1>(y, x, w, b, M, N, K, x_map, w_map, y_map);
}

template <typename T, ktune::dev::gemm::Act ACT, int MT, int BN, int STAGES, int GROUP_M, int TPB, int PINGPONG>
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1)
    gemm_act_wgmma_tma_pair(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w,
                            const T* __restrict__ b, int M, int N, int K,
                            const __grid_constant__ ktune::dev::gemm_ws::TensorMap x_map,
                            const __grid_constant__ ktune::dev::gemm_ws::TensorMap w_map,
                            const __grid_constant__ ktune::dev::gemm_ws::TensorMap y_map) {
    gemm_tma_entry<T, ACT, false, MT, BN, STAGES, GROUP_M, TPB, PINGPONG, 2>(y, x, w, b, M, N, K, x_map, w_map, y_map);
}

template <typename T, ktune::dev::gemm::Act ACT, int MT, int BN, int STAGES, int GROUP_M, int TPB, int PINGPONG>
__global__ void __launch_bounds__(384, 1)
    ffn_gated_wgmma_tma(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w, int M, int I, int K,
                        const __grid_constant__ ktune::dev::gemm_ws::TensorMap x_map,
                        const __grid_constant__ ktune::dev::gemm_ws::TensorMap w_map,
                        const __grid_constant__ ktune::dev::gemm_ws::TensorMap y_map) {
    gemm_tma_entry<T, ACT, true, MT, BN, STAGES, GROUP_M, TPB, PINGPONG, 1>(y, x, w, nullptr, M, I, K, x_map, w_map,
                                                                            y_map);
}

template <typename T, ktune::dev::gemm::Act ACT, int MT, int BN, int STAGES, int GROUP_M, int TPB, int PINGPONG>
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1)
    ffn_gated_wgmma_tma_pair(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w, int M, int I, int K,
                             const __grid_constant__ ktune::dev::gemm_ws::TensorMap x_map,
                             const __grid_constant__ ktune::dev::gemm_ws::TensorMap w_map,
                             const __grid_constant__ ktune::dev::gemm_ws::TensorMap y_map) {
    gemm_tma_entry<T, ACT, true, MT, BN, STAGES, GROUP_M, TPB, PINGPONG, 2>(y, x, w, nullptr, M, I, K, x_map, w_map,
                                                                            y_map);
}
