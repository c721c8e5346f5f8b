#pragma once
// Decode attention, the tensor-core kernel: each warp takes tiles of 16 tokens, S = Q K^T and O += P V with mma.sync
// (heads are the M rows), so the SIMT walk's per-token shuffles and the exponentials repeated on every lane disappear
// (the SIMT walk is issue-bound at GROUP 8); the splits merge through scratch. The walk: decode_attention_mma_walk.cuh;
// operation, layouts and the SIMT walk it falls back to for misaligned k or v: decode_attention_common.cuh. Driven by
// search_spaces/decode_attention.yaml and decode_attention_gqa8.yaml (alternative mma).
//
// Tunables (template parameters, named as the YAML keys): HEAD_DIM (a multiple of 64), GROUP, WARPS and SPLITS as the
// common header says, and
//   TOKENS    tiles of 16 tokens per warp per step, 1..8.
//   STAGES    2..8 warp-private stages, STAGES - 1 steps in flight while one is computed.
//
// Launch: as the common header says, with max(STAGES * 2 * TOKENS * sizeof(T) * WARPS * 16 * HEAD_DIM, WARPS * GROUP
// * (HEAD_DIM + 2) * 4, (2 * SPLITS + 1) * GROUP * 4) bytes of dynamic shared memory; no static shared memory, so
// 48 KiB and less need no opt-in.
#include "kernels/attention/decode_attention_mma_walk.cuh"
#include "kernels/common/dependent_launch.cuh"

template <typename T, int HEAD_DIM, int GROUP, int WARPS, int TOKENS, int STAGES, int SPLITS>
__global__ void __cluster_dims__(1, 1, 1) __launch_bounds__(WARPS * 32)
    decode_attention_mma(T* __restrict__ out, const T* __restrict__ q, const T* __restrict__ k_cache,
                         const T* __restrict__ v_cache, const int* __restrict__ seq_lens, float* __restrict__ scratch,
                         int batch, int q_heads, int kv_heads, int head_dim, int max_len, float scale, int max_splits) {
    // Programmatic launch (dependent_launch.cuh): nothing read or written before the kernel before is done; the next
    // one may start its own early part now.
    ktune::dev::wait_prior_grids();
    ktune::dev::launch_dependents();
    static_assert(sizeof(T) == 2, "decode_attention_mma: T is __half or __nv_bfloat16");
    static_assert(HEAD_DIM % 64 == 0 && HEAD_DIM <= 256, "decode_attention_mma: HEAD_DIM a multiple of 64, <= 256");
    static_assert(GROUP >= 1 && GROUP <= 16, "decode_attention_mma: GROUP in [1, 16]");
    static_assert(WARPS >= 1 && WARPS <= 16, "decode_attention_mma: WARPS in [1, 16]");
    static_assert(TOKENS >= 1 && TOKENS <= 8, "decode_attention_mma: TOKENS in [1, 8]");
    static_assert(STAGES >= 2 && STAGES <= 8, "decode_attention_mma: STAGES in [2, 8]");
    static_assert(SPLITS >= 1 && SPLITS <= ktune::decode_attention_layout::MAX_SPLITS,
                  "decode_attention_mma: SPLITS in [1, 128]");

    using namespace ktune::dev;
    using namespace ktune::dev::decode_attention;
    using M = MmaShape<T, HEAD_DIM, WARPS, TOKENS, STAGES>;
    constexpr int SV = FALLBACK_VEC<HEAD_DIM>;
    using SS = Shape<T, HEAD_DIM, GROUP, WARPS, SV, 1, STAGES>;
    // Shared memory: the pipeline's stages, then the warps' merge, then the splits' merge (weights and sums).
    constexpr int PIPE_BYTES = WARPS * M::WARP_BYTES;
    constexpr int BLOCK_BYTES = PIPE_BYTES > SS::MERGE_BYTES ? PIPE_BYTES : SS::MERGE_BYTES;
    constexpr int SPLIT_BYTES = SPLITS > 1 ? (2 * SPLITS + 1) * GROUP * 4 : 0;
    constexpr int SMEM_BYTES = BLOCK_BYTES > SPLIT_BYTES ? BLOCK_BYTES : SPLIT_BYTES;
    static_assert(SMEM_BYTES <= 232448, "decode_attention_mma: shared memory <= 227 KiB");
    extern __shared__ __align__(16) unsigned char smem[];

    // A launch that does not match the configuration writes nothing (the validation then fails): uniform.
    if (gridDim.x != SPLITS || gridDim.y != static_cast<unsigned>(kv_heads) ||
        gridDim.z != static_cast<unsigned>(batch) || q_heads != kv_heads * GROUP || head_dim != HEAD_DIM ||
        SPLITS > max_splits || dynamic_smem_bytes() < static_cast<unsigned>(SMEM_BYTES))
        return;

    const int split = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const T* qh = q + (static_cast<long long>(b) * q_heads + static_cast<long long>(hk) * GROUP) * HEAD_DIM;

    int len = seq_lens[b];
    len = len < 0 ? 0 : (len > max_len ? max_len : len);
    const int chunk = (len + SPLITS - 1) / SPLITS;
    Walk wk;
    wk.head_base = (static_cast<long long>(b) * kv_heads + hk) * max_len * HEAD_DIM;
    wk.start = min(len, split * chunk);
    wk.end = min(len, wk.start + chunk);
    wk.gid = warp * SS::GPW + lane / SS::TPT;
    wk.d0 = (lane % SS::TPT) * SV;

    const float qscale = scale * 1.4426950408889634f;  // scores in log2 units
    float* ms = reinterpret_cast<float*>(smem);  // [WARPS][GROUP]
    float* ls = ms + WARPS * GROUP;              // [WARPS][GROUP]
    float* as = ls + WARPS * GROUP;              // [WARPS][GROUP][HEAD_DIM]

    walk_with_fallback<T, HEAD_DIM, GROUP, WARPS, TOKENS, STAGES, SPLITS, false>(wk, len, split, k_cache, v_cache, smem,
                                                                                qh, qscale, ms, ls, as, warp, lane);
    __syncthreads();

    T* ob = out + (static_cast<long long>(b) * q_heads + static_cast<long long>(hk) * GROUP) * HEAD_DIM;
    float* parts = write_partial<T, HEAD_DIM, GROUP, WARPS, SPLITS>(ob, scratch, ms, ls, as, batch, kv_heads, b, hk,
                                                                     split, tid);
    if constexpr (SPLITS > 1) {
        unsigned* counter = reinterpret_cast<unsigned*>(scratch) + static_cast<long long>(b) * kv_heads + hk;
        merge_splits<T, HEAD_DIM, GROUP, WARPS, SPLITS>(ob, parts, counter, smem);
    }
}
