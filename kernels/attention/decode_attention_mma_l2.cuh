#pragma once
// Decode attention, the tensor-core kernel with the short chains that B = 1 needs (128 blocks of 32-256 KB each: fixed
// latencies and the L2 decide, not the walk; on the H100 every SIMT and tensor-core configuration of B=1 L=8192 landed
// within 21.4-23 us). The tensor-core kernel (decode_attention_mma.cuh) with:
//   - K and V copies carry an L2 evict-first policy. They are read once; without it each line they bring in evicts
//     one of whatever the L2 held, and dirty lines (a previous kernel's outputs; under cold-L2 timing the flush
//     kernel's 2 x L2 of writes) cost a DRAM write-back each, up to one per line read: at B=1 L=8192 up to 33.5 MB
//     written beside the 33.5 MB read. With it the stream's lines replace each other after the first few per set.
//   - The sequence length's DRAM round trip (every address depends on it) is spent prefetching into L2 the first
//     STAGES - 1 steps of tiles under the partition of a full cache (exact at U = 1) and q's rows; q's fragments
//     are then loaded before the first copies.
//   - The splits' merge: one fence and one atomic by thread 0 after the block's barrier, and the completing block
//     loads every split's (m, l) and accumulators in one round instead of two or three (merge_splits_fast).
//   - Split s takes block steps s, s + SPLITS, s + 2 SPLITS, ... (WARPS * TOKENS * 16 tokens each) instead of one
//     contiguous chunk: whatever the sequence's length, the L2 prefetch above covers tokens every split reads, and
//     a (sequence, kv head)'s blocks read one window of the cache at a time (H100, bf16: -3 to -7 % kernel time at
//     uneven lengths, within 1 % at full ones; 2026-11-23).
// The walk and the prefetch: decode_attention_mma_walk.cuh; operation, layouts and the SIMT walk it falls back to for
// misaligned k or v: decode_attention_common.cuh. Driven by search_spaces/decode_attention.yaml and
// decode_attention_gqa8.yaml (alternative mma_l2).
//
// Tunables and launch: as the tensor-core kernel's (decode_attention_mma.cuh).
#include "kernels/attention/decode_attention_mma_walk.cuh"
#include "kernels/common/dependent_launch.cuh"

namespace ktune::dev::decode_attention {

// The splits' merge: merge_splits' last-block pattern with a shorter dependent chain. One fence and one atomic by
// thread 0 after the block's barrier (the cooperative-groups grid-barrier pattern: the barrier orders the other
// threads' partial stores before thread 0's fence), then the completing block loads every split's (m, l) and
// accumulators in one round (the current merge loads (m, l) first, then the accumulators), at most NB splits per
// thread at a time. RT lanes per quad of outputs take every RT-th split; each batch's max over the RT lanes (a
// butterfly of fmaxf: every lane gets the same value) is the common reference, so the lanes' sums need no rescaling
// before the final butterfly. Fixed order (split index, then the butterfly): the result does not depend on arrival.
template <typename T, int HEAD_DIM, int GROUP, int WARPS, int SPLITS>
__device__ __forceinline__ void merge_splits_fast(T* __restrict__ ob, const float* parts, unsigned* counter,
                                                  unsigned char* smem) {
    namespace layout = ktune::decode_attention_layout;
    constexpr int THREADS = WARPS * 32;
    constexpr long long PH = layout::partial_head_floats(HEAD_DIM);
    constexpr long long PF = layout::partial_floats(GROUP, HEAD_DIM);
    const int tid = threadIdx.x;
    int* flag = reinterpret_cast<int*>(smem);
    __syncthreads();  // every thread's partial stores, then thread 0 publishes them (fence) and counts the split
    if (tid == 0) {
        __threadfence();
        const bool last = atomicAdd(counter, 1u) == static_cast<unsigned>(SPLITS - 1);
        if (last) {
            *counter = 0u;    // every split has arrived: nobody else touches it in this launch
            __threadfence();  // the other splits' partials, published before their arrivals, are seen
        }
        *flag = last;
    }
    __syncthreads();
    if (*flag == 0) return;  // uniform over the block

    constexpr int NQ = GROUP * HEAD_DIM / 4;
    constexpr int RT = merge_lanes_per_quad(THREADS, NQ);
    constexpr int NS = (SPLITS + RT - 1) / RT;  // splits per lane
    constexpr int NB = NS <= 16 ? NS : 8;       // ... loaded at once (one round up to 16 per lane)
    const bool quads = is_aligned(parts, 16);
#pragma unroll 1
    for (int i0 = 0; i0 < NQ * RT; i0 += THREADS) {
        const int i = i0 + tid;
        const bool act = i < NQ * RT;
        const int qd = act ? i / RT : 0, r = i % RT;
        const int h = (4 * qd) / HEAD_DIM, d = (4 * qd) % HEAD_DIM;
        const float* p = parts + h * PH + d;
        float mx = neg_inf(), l = 0.0f;
        float o[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll 1
        for (int j0 = 0; j0 < NS; j0 += NB) {
            float mv[NB], lv[NB], av[NB][4];
#pragma unroll
            for (int j = 0; j < NB; ++j) {
                const int sp = r + RT * (j0 + j);
                mv[j] = neg_inf();
                lv[j] = 0.0f;
#pragma unroll
                for (int e = 0; e < 4; ++e) av[j][e] = 0.0f;
                if (act && j0 + j < NS && sp < SPLITS) {
                    const float* ps = p + sp * PF;
                    if (quads) {
                        const float4 a4 = __ldcg(reinterpret_cast<const float4*>(ps));
                        const float2 ml = __ldcg(reinterpret_cast<const float2*>(ps + (HEAD_DIM - d)));
                        av[j][0] = a4.x, av[j][1] = a4.y, av[j][2] = a4.z, av[j][3] = a4.w;
                        mv[j] = ml.x, lv[j] = ml.y;
                    } else {
#pragma unroll
                        for (int e = 0; e < 4; ++e) av[j][e] = __ldcg(ps + e);
                        mv[j] = __ldcg(ps + (HEAD_DIM - d));
                        lv[j] = __ldcg(ps + (HEAD_DIM - d) + 1);
                    }
                }
            }
            float bm = mx;
#pragma unroll
            for (int j = 0; j < NB; ++j) bm = fmaxf(bm, mv[j]);
#pragma unroll
            for (int off = RT / 2; off > 0; off >>= 1) bm = fmaxf(bm, __shfl_xor_sync(FULL_MASK, bm, off));
            const float ref = safe_max_ref(bm);
            const float corr = fast_exp2(mx - ref);  // 0 while nothing was seen (mx = -inf)
            l *= corr;
#pragma unroll
            for (int e = 0; e < 4; ++e) o[e] *= corr;
#pragma unroll
            for (int j = 0; j < NB; ++j) {
                const float wgt = fast_exp2(mv[j] - ref);  // 0 for an empty split or a missing one (m = -inf)
                l = fmaf(lv[j], wgt, l);
#pragma unroll
                for (int e = 0; e < 4; ++e) o[e] = fmaf(av[j][e], wgt, o[e]);
            }
            mx = bm;
        }
#pragma unroll
        for (int off = RT / 2; off > 0; off >>= 1) {
            l += __shfl_xor_sync(FULL_MASK, l, off);
#pragma unroll
            for (int e = 0; e < 4; ++e) o[e] += __shfl_xor_sync(FULL_MASK, o[e], off);
        }
        if (act && r == 0) {
#pragma unroll
            for (int e = 0; e < 4; ++e) ob[h * HEAD_DIM + d + e] = from_float<T>(l > 0.0f ? o[e] / l : 0.0f);
        }
    }
}

}  // namespace ktune::dev::decode_attention

template <typename T, int HEAD_DIM, int GROUP, int WARPS, int TOKENS, int STAGES, int SPLITS>
__global__ void __cluster_dims__(1, 1, 1) __launch_bounds__(WARPS * 32)
    decode_attention_mma_l2(T* __restrict__ out, const T* __restrict__ q, const T* __restrict__ k_cache,
                            const T* __restrict__ v_cache, const int* __restrict__ seq_lens,
                            float* __restrict__ scratch, int batch, int q_heads, int kv_heads, int head_dim,
                            int max_len, float scale, int max_splits) {
    static_assert(sizeof(T) == 2, "decode_attention_mma_l2: T is __half or __nv_bfloat16");
    static_assert(HEAD_DIM % 64 == 0 && HEAD_DIM <= 256, "decode_attention_mma_l2: HEAD_DIM a multiple of 64, <= 256");
    static_assert(GROUP >= 1 && GROUP <= 16, "decode_attention_mma_l2: GROUP in [1, 16]");
    static_assert(WARPS >= 1 && WARPS <= 16, "decode_attention_mma_l2: WARPS in [1, 16]");
    static_assert(TOKENS >= 1 && TOKENS <= 8, "decode_attention_mma_l2: TOKENS in [1, 8]");
    static_assert(STAGES >= 2 && STAGES <= 8, "decode_attention_mma_l2: STAGES in [2, 8]");
    static_assert(SPLITS >= 1 && SPLITS <= ktune::decode_attention_layout::MAX_SPLITS,
                  "decode_attention_mma_l2: SPLITS in [1, 128]");

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
    static_assert(SMEM_BYTES <= 232448, "decode_attention_mma_l2: shared memory <= 227 KiB");
    extern __shared__ __align__(16) unsigned char smem[];

    // A launch that does not match the configuration writes nothing (the validation then fails): uniform.
    if (gridDim.x != SPLITS || gridDim.y != static_cast<unsigned>(kv_heads) ||
        gridDim.z != static_cast<unsigned>(batch) || q_heads != kv_heads * GROUP || head_dim != HEAD_DIM ||
        SPLITS > max_splits || dynamic_smem_bytes() < static_cast<unsigned>(SMEM_BYTES))
        return;

    const int split = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const T* qh = q + (static_cast<long long>(b) * q_heads + static_cast<long long>(hk) * GROUP) * HEAD_DIM;

    {
        // The first tiles of the cache (up to max_len: no length needed) asked into L2 before the wait of a
        // programmatic launch (dependent_launch.cuh), while the kernel before finishes: L2 is where writes land, so
        // a line it is still writing is safe to request. seq_lens, q and the cache are read only after the wait.
        const long long hb = (static_cast<long long>(b) * kv_heads + hk) * max_len * HEAD_DIM;
        prefetch_first_tiles<T, HEAD_DIM, GROUP, WARPS, TOKENS, STAGES, SPLITS>(k_cache + hb, v_cache + hb, qh,
                                                                                max_len);
    }
    ktune::dev::wait_prior_grids();
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

    walk_with_fallback<T, HEAD_DIM, GROUP, WARPS, TOKENS, STAGES, SPLITS, true>(wk, len, split, k_cache, v_cache, smem,
                                                                                qh, qscale, ms, ls, as, warp, lane);
    // The next kernel may start once every block is past its walk of the cache (dependent_launch.cuh): asked at the
    // start, its blocks waited on the SMs beside this one's for the whole walk.
    ktune::dev::launch_dependents();
    __syncthreads();

    T* ob = out + (static_cast<long long>(b) * q_heads + static_cast<long long>(hk) * GROUP) * HEAD_DIM;
    float* parts = write_partial<T, HEAD_DIM, GROUP, WARPS, SPLITS>(ob, scratch, ms, ls, as, batch, kv_heads, b, hk,
                                                                     split, tid);
    if constexpr (SPLITS > 1) {
        unsigned* counter = reinterpret_cast<unsigned*>(scratch) + static_cast<long long>(b) * kv_heads + hk;
        merge_splits_fast<T, HEAD_DIM, GROUP, WARPS, SPLITS>(ob, parts, counter, smem);
    }
}
