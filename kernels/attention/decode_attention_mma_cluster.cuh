#pragma once
// Decode attention, the tensor-core kernel with the short chains (decode_attention_mma_l2.cuh) and the splits merged
// through distributed shared memory instead of scratch. The L2 kernel's merge is a chain of latencies at the kernel's
// tail: every block's partial stores, a GPU-scope fence (MEMBAR, ~0.5 us), an atomic's round trip, then the last block
// re-reads all partials from L2. Here the SPLITS blocks of a (sequence, kv head) form one thread-block cluster
// (__cluster_dims__(SPLITS): SPLITS <= 16, more than 8 non-portable). The group's outputs are cut into SPLITS slices;
// block r merges and writes slice r. After its warps' merge each block pushes its part of slice r, and its (m, l) of
// the heads slice r touches, into block r's shared memory with st.async, completing bytes on r's mbarrier
// (kernels/common/ktune_cluster.cuh); block r waits for all its bytes and merges in split order (deterministic). No
// scratch, fence or atomic; the only cluster barrier (relaxed arrival at entry, wait before the first push) orders the
// mbarriers' initialisation before the pushes. The receive buffer is static shared memory (ClusterMergeBuffers: other
// blocks push while this one still walks its pipeline in the dynamic part).
// On the H100 (both dtypes, every problem of both spaces; 2026-11-26) this kernel's best took 10-36 % off the L2
// kernel's kernel time at B = 1 (L=8192 32/8 heads: 16.6 -> 14.9 us, 76 % of copy), 1-14 % at B = 8, and was within
// 1 % at B = 64, where one or two splits leave little to merge and DRAM is the limit.
// Driven by search_spaces/decode_attention.yaml and decode_attention_gqa8.yaml (alternative mma_cluster).
//
// Tunables: as the tensor-core kernel's (decode_attention_mma.cuh), with SPLITS 2..16, the cluster's size.
// Launch: as the tensor-core kernel's, with max(STAGES * 2 * TOKENS * sizeof(T) * WARPS * 16 * HEAD_DIM, WARPS *
// GROUP * (HEAD_DIM + 2) * 4) bytes of dynamic shared memory (no splits' merge there), beside the static receive
// buffer: SPLITS * (4 * ceil(GROUP * HEAD_DIM / 4 / SPLITS) + 2 * GROUP) floats and an mbarrier, rounded up to 128
// bytes (static + dynamic <= 227 KiB).
#include "kernels/attention/decode_attention_mma_walk.cuh"
#include "kernels/common/dependent_launch.cuh"

namespace ktune::dev::decode_attention {

// ---- the splits' merge through distributed shared memory ------------------------------------------------------------
// The SPLITS blocks of a (sequence, kv head) are one cluster. Its GROUP * HEAD_DIM outputs, in quads of 4, are cut into
// SPLITS slices of QS quads (the last slices may hold fewer, or none); the block of cluster rank r merges and writes
// slice r. After its warps' merge each block pushes (st.async, completing on the receiver's mbarrier) its unnormalised
// quads of slice r and its (m, l) of the heads slice r touches into block r's receive buffer, row = the sender's split;
// each block then waits for its bytes and merges its slice in split order. Nothing goes through global memory: no
// scratch writes and re-reads, no GPU-scope fence, no atomic.
template <int HEAD_DIM, int GROUP, int SPLITS>
struct ClusterSlices {
    static constexpr int NQ = GROUP * HEAD_DIM / 4;       // output quads of a (sequence, kv head)
    static constexpr int HQ4 = HEAD_DIM / 4;              // quads per head
    static constexpr int QS = (NQ + SPLITS - 1) / SPLITS;  // quads per slice
    KTUNE_HD static constexpr int first(int r) { return r * QS < NQ ? r * QS : NQ; }
    KTUNE_HD static constexpr int count(int r) { return ((r + 1) * QS < NQ ? (r + 1) * QS : NQ) - first(r); }
    // Heads slice r touches, and the ranks whose slices touch head h: [rank_lo(h), rank_lo(h) + ranks(h)).
    KTUNE_HD static constexpr int heads(int r) {
        return count(r) == 0 ? 0 : (first(r) + count(r) - 1) / HQ4 - first(r) / HQ4 + 1;
    }
    KTUNE_HD static constexpr int rank_lo(int h) { return h * HQ4 / QS; }
    KTUNE_HD static constexpr int ranks(int h) { return ((h + 1) * HQ4 - 1) / QS - rank_lo(h) + 1; }
    // What block r receives: every split's quads of slice r and (m, l) of its heads. A mismatch would hang the
    // kernel, so consistent() replays the senders' pushes at compile time.
    KTUNE_HD static constexpr unsigned bytes(int r) { return SPLITS * (16u * count(r) + 8u * heads(r)); }
    KTUNE_HD static constexpr bool consistent() {
        if (HEAD_DIM % 4 != 0) return false;
        for (int h = 0; h < GROUP; ++h)  // head h's quads dq < ranks(h) push its (m, l), one rank each
            if (ranks(h) < 1 || ranks(h) > HQ4 || rank_lo(h) + ranks(h) > SPLITS) return false;
        for (int r = 0; r < SPLITS; ++r) {
            unsigned sent = 0;  // per sender
            for (int q = 0; q < NQ; ++q) sent += q / QS == r ? 16u : 0u;
            for (int h = 0; h < GROUP; ++h) sent += r >= rank_lo(h) && r < rank_lo(h) + ranks(h) ? 8u : 0u;
            if (SPLITS * sent != bytes(r) || bytes(r) >= (1u << 20) || count(r) > QS) return false;
            for (int q = first(r); q < first(r) + count(r); ++q)  // the (m, l) the merge reads did arrive
                if (r < rank_lo(q / HQ4) || r >= rank_lo(q / HQ4) + ranks(q / HQ4)) return false;
        }
        return true;
    }
};

// The receive buffer, static shared memory beside the pipeline's dynamic one (other blocks push while this one still
// walks). 128-byte multiple, so the dynamic part after it keeps its alignment (the swizzle's bank pattern).
template <int HEAD_DIM, int GROUP, int SPLITS>
struct __align__(128) ClusterMergeBuffers {
    float4 o[SPLITS][ClusterSlices<HEAD_DIM, GROUP, SPLITS>::QS];  // by sender split, then quad of this slice
    float2 ml[SPLITS][GROUP];                                     // (m, l) by sender split and head
    unsigned long long bar;
};

// The receive buffer, static shared memory of the kernel that instantiates this.
template <int HEAD_DIM, int GROUP, int SPLITS>
__device__ __forceinline__ ClusterMergeBuffers<HEAD_DIM, GROUP, SPLITS>& cluster_merge_buffers() {
    __shared__ ClusterMergeBuffers<HEAD_DIM, GROUP, SPLITS> buf;
    return buf;
}

// Every thread, at kernel entry: the mbarrier with this block's one arrival (all the bytes it will receive) and the
// arrival of the cluster barrier whose wait precedes the first push. Relaxed: the init's fence is the release.
template <int HEAD_DIM, int GROUP, int SPLITS>
__device__ __forceinline__ void cluster_merge_init(int rank) {
    auto& buf = cluster_merge_buffers<HEAD_DIM, GROUP, SPLITS>();
    if (threadIdx.x == 0) {
        mbarrier_init(&buf.bar);
        mbarrier_expect_bytes(&buf.bar, ClusterSlices<HEAD_DIM, GROUP, SPLITS>::bytes(rank));
    }
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}

// Every thread, after the warps' partials are in shared memory (ms, ls, as: the kernel's layout): the block's (o, m,
// l) per quad as the other kernels compute them for scratch, pushed to the quad's slice owner; quad dq < ranks(h) of
// head h also pushes (m, l) to rank rank_lo(h) + dq. Row `split` (blockIdx.x) of the receivers' buffers.
template <int HEAD_DIM, int GROUP, int WARPS, int SPLITS>
__device__ __forceinline__ void cluster_merge_push(const float* ms, const float* ls, const float* as, int split) {
    using C = ClusterSlices<HEAD_DIM, GROUP, SPLITS>;
    auto& buf = cluster_merge_buffers<HEAD_DIM, GROUP, SPLITS>();
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");  // every block's mbarrier is initialised
    for (int qd = threadIdx.x; qd < C::NQ; qd += WARPS * 32) {
        const int h = qd / C::HQ4, dq = qd % C::HQ4;
        float mx = neg_inf();
#pragma unroll
        for (int w = 0; w < WARPS; ++w) mx = fmaxf(mx, ms[w * GROUP + h]);
        const float ref = safe_max_ref(mx);
        float4 o = {0.0f, 0.0f, 0.0f, 0.0f};
        float l = 0.0f;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
            const float c = fast_exp2(ms[w * GROUP + h] - ref);
            const float* a = as + (w * GROUP + h) * HEAD_DIM + 4 * dq;
            o.x = fmaf(a[0], c, o.x);
            o.y = fmaf(a[1], c, o.y);
            o.z = fmaf(a[2], c, o.z);
            o.w = fmaf(a[3], c, o.w);
            l = fmaf(ls[w * GROUP + h], c, l);
        }
        const int to = qd / C::QS;
        cluster_push(shared_address(&buf.o[split][qd - to * C::QS]), o, &buf.bar, to);
        if (dq < C::ranks(h)) {
            const float2 ml = {mx, l};
            cluster_push(shared_address(&buf.ml[split][h]), ml, &buf.bar, C::rank_lo(h) + dq);
        }
    }
}

// Every thread: waits for the SPLITS senders' bytes, then merges slice `rank` into ob (the group's outputs). RT
// adjacent lanes per quad take every RT-th split in split order, their common reference is a butterfly max, and their
// sums a butterfly: a fixed order, independent of arrival. RT <= 4: two shuffle levels, each lane's splits loaded at
// once. Empty splits (m = -inf) weigh 0; a slice with l = 0 (empty sequence) writes 0.
template <typename T, int HEAD_DIM, int GROUP, int WARPS, int SPLITS>
__device__ __forceinline__ void cluster_merge_slice(T* __restrict__ ob, int rank) {
    using C = ClusterSlices<HEAD_DIM, GROUP, SPLITS>;
    auto& buf = cluster_merge_buffers<HEAD_DIM, GROUP, SPLITS>();
    constexpr int THREADS = WARPS * 32;
    constexpr int RT0 = merge_lanes_per_quad(THREADS, C::QS);
    constexpr int RT = RT0 < 4 ? RT0 : 4;
    constexpr int NS = (SPLITS + RT - 1) / RT;
    const int n = C::count(rank), q0 = C::first(rank);
    const bool pairs = is_aligned(ob, 4 * sizeof(T));
    mbarrier_wait<true>(&buf.bar, 0);  // every split's quads and (m, l) of this slice are here
#pragma unroll 1
    for (int i0 = 0; i0 < C::QS * RT; i0 += THREADS) {
        const int i = i0 + static_cast<int>(threadIdx.x);
        const int j = i / RT, r = i % RT;
        const bool act = j < n;  // uniform over the RT lanes of a quad
        const int h = act ? (q0 + j) / C::HQ4 : 0;
        float mv[NS], lv[NS], av[NS][4];
#pragma unroll
        for (int k = 0; k < NS; ++k) {
            const int sp = r + RT * k;
            mv[k] = neg_inf();
            lv[k] = 0.0f;
            av[k][0] = av[k][1] = av[k][2] = av[k][3] = 0.0f;
            if (act && sp < SPLITS) {
                const float2 ml = buf.ml[sp][h];
                const float4 a = buf.o[sp][j];
                mv[k] = ml.x, lv[k] = ml.y;
                av[k][0] = a.x, av[k][1] = a.y, av[k][2] = a.z, av[k][3] = a.w;
            }
        }
        float bm = neg_inf();
#pragma unroll
        for (int k = 0; k < NS; ++k) bm = fmaxf(bm, mv[k]);
#pragma unroll
        for (int off = RT / 2; off > 0; off >>= 1) bm = fmaxf(bm, __shfl_xor_sync(FULL_MASK, bm, off));
        const float ref = safe_max_ref(bm);
        float l = 0.0f, o[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int k = 0; k < NS; ++k) {
            const float wgt = fast_exp2(mv[k] - ref);  // 0 for an empty split or a missing one (m = -inf)
            l = fmaf(lv[k], wgt, l);
#pragma unroll
            for (int e = 0; e < 4; ++e) o[e] = fmaf(av[k][e], wgt, o[e]);
        }
#pragma unroll
        for (int off = RT / 2; off > 0; off >>= 1) {
            l += __shfl_xor_sync(FULL_MASK, l, off);
#pragma unroll
            for (int e = 0; e < 4; ++e) o[e] += __shfl_xor_sync(FULL_MASK, o[e], off);
        }
        if (act && r == 0) {
            float y[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) y[e] = l > 0.0f ? o[e] / l : 0.0f;
            T* dst = ob + 4 * (q0 + j);
            if (pairs) {
                uint2 w;
                w.x = pack_word<T>(y);
                w.y = pack_word<T>(y + 2);
                *reinterpret_cast<uint2*>(dst) = w;
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e) dst[e] = from_float<T>(y[e]);
            }
        }
    }
}

}  // namespace ktune::dev::decode_attention

template <typename T, int HEAD_DIM, int GROUP, int WARPS, int TOKENS, int STAGES, int SPLITS>
__global__ void __cluster_dims__(SPLITS, 1, 1) __launch_bounds__(WARPS * 32)
    decode_attention_mma_cluster(T* __restrict__ out, const T* __restrict__ q, const T* __restrict__ k_cache,
                                 const T* __restrict__ v_cache, const int* __restrict__ seq_lens,
                                 float* __restrict__ scratch, int batch, int q_heads, int kv_heads, int head_dim,
                                 int max_len, float scale, int max_splits) {
    static_assert(sizeof(T) == 2, "decode_attention_mma_cluster: T is __half or __nv_bfloat16");
    static_assert(HEAD_DIM % 64 == 0 && HEAD_DIM <= 256,
                  "decode_attention_mma_cluster: HEAD_DIM a multiple of 64, <= 256");
    static_assert(GROUP >= 1 && GROUP <= 16, "decode_attention_mma_cluster: GROUP in [1, 16]");
    static_assert(WARPS >= 1 && WARPS <= 16, "decode_attention_mma_cluster: WARPS in [1, 16]");
    static_assert(TOKENS >= 1 && TOKENS <= 8, "decode_attention_mma_cluster: TOKENS in [1, 8]");
    static_assert(STAGES >= 2 && STAGES <= 8, "decode_attention_mma_cluster: STAGES in [2, 8]");
    static_assert(SPLITS >= 2 && SPLITS <= 16,
                  "decode_attention_mma_cluster: SPLITS in [2, 16] (one cluster of SPLITS blocks)");

    using namespace ktune::dev;
    using namespace ktune::dev::decode_attention;
    using M = MmaShape<T, HEAD_DIM, WARPS, TOKENS, STAGES>;
    constexpr int SV = FALLBACK_VEC<HEAD_DIM>;
    using SS = Shape<T, HEAD_DIM, GROUP, WARPS, SV, 1, STAGES>;
    // Shared memory: the pipeline's stages, then the warps' merge; the receive buffer (static): the slices' pushes must
    // match each receiver's expected bytes.
    constexpr int PIPE_BYTES = WARPS * M::WARP_BYTES;
    constexpr int SMEM_BYTES = PIPE_BYTES > SS::MERGE_BYTES ? PIPE_BYTES : SS::MERGE_BYTES;
    constexpr int STATIC_BYTES = int(sizeof(ClusterMergeBuffers<HEAD_DIM, GROUP, SPLITS>));
    static_assert(SMEM_BYTES + STATIC_BYTES <= 232448, "decode_attention_mma_cluster: shared memory <= 227 KiB");
    static_assert(ClusterSlices<HEAD_DIM, GROUP, SPLITS>::consistent(),
                  "decode_attention_mma_cluster: the slices and byte counts disagree");
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
    // The cluster (this (sequence, kv head)'s SPLITS blocks: grid x = cluster x = SPLITS) sets up its merge right
    // behind the first loads, so the cluster barrier's arrival overlaps the walk. The rank owns a slice of the outputs;
    // blockIdx.x stays the split (its tokens, its row in the receive buffers): nothing assumes the two equal.
    const int rank = cluster_rank<SPLITS>();
    cluster_merge_init<HEAD_DIM, GROUP, SPLITS>(rank);
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

    // walk_with_fallback<..., FAST = true> written out: called, it changes how ptxas allocates the merge's registers at
    // some configurations (GROUP 4, SPLITS 16).
    const bool aligned16 = is_aligned(k_cache, 16) && is_aligned(v_cache, 16);
    bool done = false;
    if (aligned16) {
        // The splits take the block steps in turn (split s: steps s, s + SPLITS, ...), so at any time a (sequence,
        // kv head)'s blocks read one window of the cache instead of SPLITS distant ones.
        wk.start = min(len, split * M::STEP);
        wk.end = len;
        wk.stride = SPLITS * M::STEP;
        wk.steps = (len - wk.start + wk.stride - 1) / wk.stride;
        MmaState<HEAD_DIM> st;
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            st.m[r] = neg_inf();
            st.l[r] = 0.0f;
        }
#pragma unroll
        for (int n = 0; n < M::NT; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) st.o[n][e] = 0.0f;
        walk_mma<T, HEAD_DIM, GROUP, WARPS, TOKENS, STAGES, true>(wk, k_cache, v_cache, smem, qh, qscale, st);
        __syncthreads();  // every warp's pipeline is drained before the merge arrays overwrite it
        const int g = lane >> 2, c = lane & 3;
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int h = g + 8 * r;
            if (h < GROUP) {
#pragma unroll
                for (int n = 0; n < M::NT; ++n) {
                    as[(warp * GROUP + h) * HEAD_DIM + n * 8 + 2 * c] = st.o[n][2 * r];
                    as[(warp * GROUP + h) * HEAD_DIM + n * 8 + 2 * c + 1] = st.o[n][2 * r + 1];
                }
                if (c == 0) {
                    ms[warp * GROUP + h] = st.m[r];
                    ls[warp * GROUP + h] = st.l[r];
                }
            }
        }
        done = true;
    }
    if (!done) {
        wk.steps = (wk.end - wk.start + SS::STEP - 1) / SS::STEP;
        float qf[GROUP][SV];
        State<GROUP, SV> st;
#pragma unroll
        for (int h = 0; h < GROUP; ++h) {
            st.m[h] = neg_inf();
            st.l[h] = 0.0f;
#pragma unroll
            for (int e = 0; e < SV; ++e) st.acc[h][e] = 0.0f;
        }
        load_q<T, HEAD_DIM, GROUP, SV>(qh + wk.d0, qscale, qf);
        walk_unaligned<T, HEAD_DIM, GROUP, WARPS, SV, 1, STAGES>(wk, k_cache, v_cache, qf, st);
        // Groups of a warp merge by shuffles, warps through shared memory (the pipeline's, now drained).
#pragma unroll
        for (int off = SS::TPT; off < 32; off <<= 1) merge_lanes<GROUP, SV>(st, off);
        __syncthreads();
        if (lane < SS::TPT) {
#pragma unroll
            for (int h = 0; h < GROUP; ++h) {
#pragma unroll
                for (int e = 0; e < SV; ++e) as[(warp * GROUP + h) * HEAD_DIM + wk.d0 + e] = st.acc[h][e];
                if (lane == 0) {
                    ms[warp * GROUP + h] = st.m[h];
                    ls[warp * GROUP + h] = st.l[h];
                }
            }
        }
    }
    // The next kernel may start once every block is past its walk of the cache (dependent_launch.cuh): asked at the
    // start, its blocks waited on the SMs beside this one's for the whole walk.
    ktune::dev::launch_dependents();
    __syncthreads();

    T* ob = out + (static_cast<long long>(b) * q_heads + static_cast<long long>(hk) * GROUP) * HEAD_DIM;
    // No scratch: the splits merge through the cluster's shared memory.
    cluster_merge_push<HEAD_DIM, GROUP, WARPS, SPLITS>(ms, ls, as, split);
    cluster_merge_slice<T, HEAD_DIM, GROUP, WARPS, SPLITS>(ob, rank);
}
