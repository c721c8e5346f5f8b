#pragma once
// Decode attention, the SIMT kernel: token groups of HEAD_DIM / VEC lanes walk the tokens with cp.async pipelining
// (decode_attention_common.cuh says how), the splits merge through scratch. Driven by
// search_spaces/decode_attention.yaml and decode_attention_gqa8.yaml (alternative simt): tuned where the tensor cores
// cannot run (HEAD_DIM not a multiple of 64); the tensor-core kernels fall back to the same walk, unpipelined, for
// misaligned k or v.
//
// Tunables (template parameters, named as the YAML keys): HEAD_DIM, GROUP, WARPS, STAGES and SPLITS as the common
// header says, and
//   VEC       head-dimension elements per lane: 4, 8 or 16 (8 or 16 bytes per access of K or V: VEC 4 moves 8 bytes,
//             VEC 8 one 16-byte access, VEC 16 two), HEAD_DIM a multiple of VEC with HEAD_DIM / VEC a power of two
//             <= 32.
//   TOKENS    tokens each group handles per pipeline step, 1..8 (scores of TOKENS tokens are reduced together, and the
//             accumulators are rescaled once per step).
//   STAGES    1..8: each lane copies its own slices of K and V for STAGES steps ahead into shared memory with cp.async
//             (no barrier: a lane only reads what it copied itself).
//
// Launch: as the common header says, with max(STAGES * 2 * TOKENS * sizeof(T) * WARPS * 32 * VEC, WARPS * GROUP *
// (HEAD_DIM + 2) * 4, (2 * SPLITS + 1) * GROUP * 4) bytes of dynamic shared memory; no static shared memory, so 48 KiB
// and less need no opt-in. The pipeline needs k and v aligned to the access size (8 or 16 bytes); otherwise every lane
// loads its elements one by one, without it.
#include "kernels/attention/decode_attention_common.cuh"
#include "kernels/common/dependent_launch.cuh"

namespace ktune::dev::decode_attention {

// The SIMT walk over this block's tokens (wk: start, end, gid, d0), pipelined where k and v are aligned to its copies,
// then the token groups' merge (shuffles) and each warp's state into ms, ls, as (shared memory: the pipeline's,
// drained).
template <typename T, int HEAD_DIM, int GROUP, int WARPS, int VEC, int TOKENS, int STAGES>
__device__ __forceinline__ void simt_walk(Walk& wk, const T* __restrict__ k_cache, const T* __restrict__ v_cache,
                                          unsigned char* smem, const T* qh, float qscale, float* ms, float* ls,
                                          float* as, int warp, int lane) {
    using SS = Shape<T, HEAD_DIM, GROUP, WARPS, VEC, TOKENS, STAGES>;
    wk.steps = (wk.end - wk.start + SS::STEP - 1) / SS::STEP;
    float qf[GROUP][VEC];
    State<GROUP, VEC> st;
#pragma unroll
    for (int h = 0; h < GROUP; ++h) {
        st.m[h] = neg_inf();
        st.l[h] = 0.0f;
#pragma unroll
        for (int e = 0; e < VEC; ++e) st.acc[h][e] = 0.0f;
    }
    bool piped = false;
    if (is_aligned(k_cache, SS::CHUNK_BYTES) && is_aligned(v_cache, SS::CHUNK_BYTES)) {
        walk_pipelined<T, HEAD_DIM, GROUP, WARPS, VEC, TOKENS, STAGES>(wk, k_cache, v_cache, smem, qh + wk.d0, qscale,
                                                                       qf, st);
        piped = true;
    }
    if (!piped) {
        load_q<T, HEAD_DIM, GROUP, VEC>(qh + wk.d0, qscale, qf);
        walk_unaligned<T, HEAD_DIM, GROUP, WARPS, VEC, TOKENS, STAGES>(wk, k_cache, v_cache, qf, st);
    }
    // Groups of a warp merge by shuffles, warps through shared memory (the pipeline's, now drained).
#pragma unroll
    for (int off = SS::TPT; off < 32; off <<= 1) merge_lanes<GROUP, VEC>(st, off);
    __syncthreads();
    if (lane < SS::TPT) {
#pragma unroll
        for (int h = 0; h < GROUP; ++h) {
#pragma unroll
            for (int e = 0; e < VEC; ++e) as[(warp * GROUP + h) * HEAD_DIM + wk.d0 + e] = st.acc[h][e];
            if (lane == 0) {
                ms[warp * GROUP + h] = st.m[h];
                ls[warp * GROUP + h] = st.l[h];
            }
        }
    }
}

}  // namespace ktune::dev::decode_attention

template <typename T, int HEAD_DIM, int GROUP, int WARPS, int VEC, int TOKENS, int STAGES, int SPLITS>
__global__ void __cluster_dims__(1, 1, 1) __launch_bounds__(WARPS * 32)
    decode_attention_simt(T* __restrict__ out, const T* __restrict__ q, const T* __restrict__ k_cache,
                          const T* __restrict__ v_cache, const int* __restrict__ seq_lens, float* __restrict__ scratch,
                          int batch, int q_heads, int kv_heads, int head_dim, int max_len, float scale,
                          int max_splits) {
    // Programmatic launch (dependent_launch.cuh): nothing read or written before the kernel before is done; the next
    // one may start its own early part now.
    ktune::dev::wait_prior_grids();
    ktune::dev::launch_dependents();
    static_assert(sizeof(T) == 2, "decode_attention_simt: T is __half or __nv_bfloat16");
    static_assert(VEC == 4 || VEC == 8 || VEC == 16, "decode_attention_simt: VEC is 4, 8 or 16");
    static_assert(HEAD_DIM % VEC == 0, "decode_attention_simt: HEAD_DIM % VEC == 0");
    static_assert(HEAD_DIM / VEC <= 32 && ((HEAD_DIM / VEC) & (HEAD_DIM / VEC - 1)) == 0,
                  "decode_attention_simt: HEAD_DIM / VEC is a power of two <= 32");
    static_assert(GROUP >= 1 && GROUP <= 16, "decode_attention_simt: GROUP in [1, 16]");
    static_assert(WARPS >= 1 && WARPS <= 16, "decode_attention_simt: WARPS in [1, 16]");
    static_assert(TOKENS >= 1 && TOKENS <= 8, "decode_attention_simt: TOKENS in [1, 8]");
    static_assert(STAGES >= 1 && STAGES <= 8, "decode_attention_simt: STAGES in [1, 8]");
    static_assert(SPLITS >= 1 && SPLITS <= ktune::decode_attention_layout::MAX_SPLITS,
                  "decode_attention_simt: SPLITS in [1, 128]");

    using namespace ktune::dev;
    using namespace ktune::dev::decode_attention;
    namespace layout = ktune::decode_attention_layout;
    using S = Shape<T, HEAD_DIM, GROUP, WARPS, VEC, TOKENS, STAGES>;
    // Shared memory: the pipeline's stages, then the warps' merge, then the splits' merge (weights and sums).
    constexpr int BLOCK_BYTES = S::PIPE_BYTES > S::MERGE_BYTES ? S::PIPE_BYTES : S::MERGE_BYTES;
    constexpr int SPLIT_BYTES = SPLITS > 1 ? (2 * SPLITS + 1) * GROUP * 4 : 0;
    constexpr int SMEM_BYTES = BLOCK_BYTES > SPLIT_BYTES ? BLOCK_BYTES : SPLIT_BYTES;
    static_assert(SMEM_BYTES <= 232448, "decode_attention_simt: shared memory <= 227 KiB");
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
    wk.gid = warp * S::GPW + lane / S::TPT;
    wk.d0 = (lane % S::TPT) * VEC;

    const float qscale = scale * 1.4426950408889634f;  // scores in log2 units
    float* ms = reinterpret_cast<float*>(smem);  // [WARPS][GROUP]
    float* ls = ms + WARPS * GROUP;              // [WARPS][GROUP]
    float* as = ls + WARPS * GROUP;              // [WARPS][GROUP][HEAD_DIM]

    simt_walk<T, HEAD_DIM, GROUP, WARPS, VEC, TOKENS, STAGES>(wk, k_cache, v_cache, smem, qh, qscale, ms, ls, as, warp,
                                                              lane);
    __syncthreads();

    T* ob = out + (static_cast<long long>(b) * q_heads + static_cast<long long>(hk) * GROUP) * HEAD_DIM;
    float* parts = write_partial<T, HEAD_DIM, GROUP, WARPS, SPLITS>(ob, scratch, ms, ls, as, batch, kv_heads, b, hk,
                                                                     split, tid);
    if constexpr (SPLITS > 1) {
        unsigned* counter = reinterpret_cast<unsigned*>(scratch) + static_cast<long long>(b) * kv_heads + hk;
        merge_splits<T, HEAD_DIM, GROUP, WARPS, SPLITS>(ob, parts, counter, smem);
    }
}
