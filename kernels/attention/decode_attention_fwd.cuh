#pragma once
// Decode attention (flash-decoding), the tuned kernel: one query token per sequence against a KV cache.
//
//   out[b, hq, :] = softmax_t(scale * q[b, hq, :] . k[b, hk, t, :]) @ v[b, hk, :, :]     t < seq_lens[b]
//
// with grouped-query heads (hk = hq / GROUP) and per-sequence lengths (clamped to [0, L]; an empty sequence gives 0).
// Layouts and scratch: kernels/attention/decode_attention_layout.cuh. T: __half, __nv_bfloat16; scores, softmax and
// accumulation in fp32 (scores in log2 units: q is pre-scaled by scale * log2(e), exponentials are ex2.approx);
// out rounded once to T. Driven by search_spaces/decode_attention.yaml and decode_attention_gqa8.yaml (op
// decode_attention, variant fwd); reference: kernels/attention/decode_attention_reference.cuh.
//
// Work split: block (split, kv head, sequence) = blockIdx (x, y, z). Each sequence's tokens are cut into SPLITS
// contiguous chunks of ceil(len / SPLITS) (ENGINE 3: the splits take the block steps in turn, below); a block reads its
// tokens of K and V once for all GROUP q heads of its kv head. Inside a block, a "token group" of HEAD_DIM / VEC lanes
// owns one token at a time (each lane VEC elements of the head dimension); the block's WARPS * 32 / (HEAD_DIM / VEC)
// groups take consecutive tokens, TOKENS each per step. Every group keeps its own online-softmax state (running max m,
// sum l, accumulators) for the GROUP heads, so the main loop has no barrier. At the end the groups merge (shuffles
// within a warp, shared memory across warps), then the splits merge in the same launch: each block writes its (m, l,
// acc) to scratch, and the last block of a (sequence, kv head) to arrive (atomic counter, reset by that block) combines
// all SPLITS partials with all its threads, in an order fixed by the split index: deterministic. ENGINE 2 replaces the
// token groups by tensor cores: each warp takes tiles of 16 tokens, S = Q K^T and O += P V with mma.sync (heads are the
// M rows), so the per-token shuffles and the exponentials repeated on every lane disappear (the SIMT walk is
// issue-bound at GROUP 8).
// ENGINE 3 is ENGINE 2 with the shorter chains that B = 1 needs (128 blocks of 32-256 KB each: fixed latencies and the
// L2 decide, not the walk; on the H100 every ENGINE 1/2 configuration of B=1 L=8192 landed within 21.4-23 us):
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
// ENGINE 4 is ENGINE 3 with the splits merged through distributed shared memory instead of scratch. ENGINE 3's merge
// is a chain of latencies at the kernel's tail: every block's partial stores, a GPU-scope fence (MEMBAR, ~0.5 us), an
// atomic's round trip, then the last block re-reads all partials from L2. Here the SPLITS blocks of a (sequence, kv
// head) form one thread-block cluster (__cluster_dims__(SPLITS): SPLITS <= 16, more than 8 non-portable). The group's
// outputs are cut into SPLITS slices; block r merges and writes slice r. After its warps' merge each block pushes its
// part of slice r, and its (m, l) of the heads slice r touches, into block r's shared memory with st.async, completing
// bytes on r's mbarrier (kernels/common/ktune_cluster.cuh); block r waits for all its bytes and merges in split order
// (deterministic). No scratch, fence or atomic; the only cluster barrier (relaxed arrival at entry, wait before the
// first push) orders the mbarriers' initialisation before the pushes. The receive buffer is static shared memory
// (ClusterMergeBuffers: other blocks push while this one still walks its pipeline in the dynamic part).
// On the H100 (both dtypes, every problem of both spaces; 2026-11-26) ENGINE 4's best took 10-36 %
// off ENGINE 3's kernel time at B = 1 (L=8192 32/8 heads: 16.6 -> 14.9 us, 76 % of copy), 1-14 % at B = 8, and was
// within 1 % at B = 64, where one or two splits leave little to merge and DRAM is the limit.
//
// Tunables (template parameters, named as the YAML keys):
//   HEAD_DIM  the head dimension D (a problem axis, repeated so the kernel holds rows in registers): a multiple of VEC
//             with HEAD_DIM / VEC a power of two <= 32.
//   GROUP     q heads per kv head, HQ / HK (a problem axis, repeated): 1..16.
//   WARPS     warps per block, 1..16.
//   VEC       head-dimension elements per lane: 4, 8 or 16 (8 or 16 bytes per access of K or V: VEC 4 moves 8 bytes,
//             VEC 8 one 16-byte access, VEC 16 two).
//   TOKENS    tokens each group handles per pipeline step, 1..8 (scores of TOKENS tokens are reduced together, and the
//             accumulators are rescaled once per step); ENGINE 2-4: tiles of 16 tokens per warp per step.
//   STAGES    pipeline depth, 1..8: each lane copies its own slices of K and V for STAGES steps ahead into shared
//             memory with cp.async (no barrier: a lane only reads what it copied itself); ENGINE 2-4: 2..8,
//             warp-private stages, STAGES - 1 steps in flight while one is computed.
//   SPLITS    chunks per sequence (blocks along grid x), 1..128, at most max_splits(B, HK) of the layout (else the
//             kernel writes nothing); ENGINE 4: 2..16, the cluster's size.
//   ENGINE    1: SIMT token groups; 2: tensor cores (HEAD_DIM % 64 == 0; VEC unused, misaligned k or v fall back to
//             the SIMT walk); 3: 2 with evict-first K/V copies, the L2 prefetch under the length load and the
//             one-round merge (same layouts, shared memory and tunables as 2); 4: 3 with the splits of a
//             (sequence, kv head) in one cluster, merged through distributed shared memory (no scratch).
//
// Launch: grid (SPLITS, HK, B), block WARPS * 32, dynamic shared memory of at least max(pipeline, warps' merge,
// splits' merge) = max(STAGES * 2 * TOKENS * sizeof(T) * WARPS * (ENGINE >= 2 ? 16 * HEAD_DIM : 32 * VEC),
// WARPS * GROUP * (HEAD_DIM + 2) * 4, (2 * SPLITS + 1) * GROUP * 4) bytes, at most 227 KiB (the YAML's shared_bytes;
// checked at run time: with too little the kernel writes nothing; ENGINE 4 needs no splits' merge there). ENGINE 1-3
// have no static shared memory, so 48 KiB and less need no opt-in; ENGINE 4 adds its receive buffer, SPLITS * (4 *
// ceil(GROUP * HEAD_DIM / 4 / SPLITS) + 2 * GROUP) floats and an mbarrier, rounded up to 128 bytes (static + dynamic
// <= 227 KiB). The fast path needs k and v aligned to the access size (8 or 16 bytes; ENGINE 2-4: 16); otherwise every
// lane loads its elements one by one, without the pipeline.
#include "kernels/attention/decode_attention_layout.cuh"
#include "kernels/common/ktune_cluster.cuh"
#include "kernels/common/ktune_device.cuh"

namespace ktune::dev::decode_attention {

inline constexpr unsigned FULL_MASK = 0xffffffffu;

template <typename T, int HEAD_DIM, int GROUP, int WARPS, int VEC, int TOKENS, int STAGES>
struct Shape {
    static constexpr int THREADS = WARPS * 32;
    static constexpr int TPT = HEAD_DIM / VEC;                               // lanes per token group
    static constexpr int GPW = 32 / TPT;                                     // groups per warp
    static constexpr int GROUPS = WARPS * GPW;                               // groups per block
    static constexpr int STEP = GROUPS * TOKENS;                             // tokens per block per step
    static constexpr int SLICE_BYTES = VEC * int(sizeof(T));                 // one lane's part of one token row
    static constexpr int W = SLICE_BYTES / 4;                                // ... in 32-bit words
    static constexpr int CHUNK_BYTES = SLICE_BYTES < 16 ? SLICE_BYTES : 16;  // one cp.async
    static constexpr int CPS = SLICE_BYTES / CHUNK_BYTES;                    // cp.asyncs per slice
    static constexpr int PIPE_BYTES = STAGES * 2 * TOKENS * SLICE_BYTES * THREADS;
    static constexpr int MERGE_BYTES = WARPS * GROUP * (HEAD_DIM + 2) * 4;
    static constexpr int SMEM_BYTES = PIPE_BYTES > MERGE_BYTES ? PIPE_BYTES : MERGE_BYTES;
};

__device__ __forceinline__ unsigned smem_address(const void* p) {
    unsigned a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}

__device__ __forceinline__ unsigned dynamic_smem_bytes() {
    unsigned n;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(n));
    return n;
}

// Copies BYTES (8 or 16) from global to shared memory asynchronously; zero-fills instead when !valid (src must still be
// a valid address).
template <int BYTES>
__device__ __forceinline__ void cp_async(void* dst, const void* src, bool valid) {
    const unsigned d = smem_address(dst);
    const int n = valid ? BYTES : 0;
    if constexpr (BYTES == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(n) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(d), "l"(src), "r"(n) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }  // no <cmath> under NVRTC

__device__ __forceinline__ float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// Online-softmax state of one token group for its GROUP heads; each lane holds VEC of the HEAD_DIM accumulators.
template <int GROUP, int VEC>
struct State {
    float acc[GROUP][VEC];
    float m[GROUP];  // running max of the scores (log2 units); -inf before the first token
    float l[GROUP];  // running sum of exp2(score - m)
};

// Scales `s` by exp2(m_old - m_new) where the max moved; m = -inf (nothing seen) is handled by using 0 as the
// reference, which gives factor 0 for the empty side.
__device__ __forceinline__ float safe_max_ref(float m) { return m == neg_inf() ? 0.0f : m; }

// One step of TOKENS tokens for one group: kw / vw hold this lane's slices of the tokens' K and V rows.
template <typename T, int GROUP, int VEC, int TOKENS, int TPT, int W>
__device__ __forceinline__ void attend(const unsigned (&kw)[TOKENS][W], const unsigned (&vw)[TOKENS][W],
                                       const bool (&valid)[TOKENS], const float (&qf)[GROUP][VEC],
                                       State<GROUP, VEC>& st) {
    constexpr int E = elems_per_word<T>;
    float s[TOKENS][GROUP];
#pragma unroll
    for (int j = 0; j < TOKENS; ++j) {
        float kf[VEC];
#pragma unroll
        for (int w = 0; w < W; ++w) unpack_word(T{}, kw[j][w], &kf[w * E]);
#pragma unroll
        for (int h = 0; h < GROUP; ++h) {
            float a = 0.0f;
#pragma unroll
            for (int e = 0; e < VEC; ++e) a = fmaf(qf[h][e], kf[e], a);
            s[j][h] = a;
        }
    }
    // Butterfly over the group's lanes: every lane gets the same bits of every score.
#pragma unroll
    for (int off = TPT / 2; off > 0; off >>= 1)
#pragma unroll
        for (int j = 0; j < TOKENS; ++j)
#pragma unroll
            for (int h = 0; h < GROUP; ++h) s[j][h] += __shfl_xor_sync(FULL_MASK, s[j][h], off);
#pragma unroll
    for (int j = 0; j < TOKENS; ++j)
        if (!valid[j])
#pragma unroll
            for (int h = 0; h < GROUP; ++h) s[j][h] = neg_inf();
#pragma unroll
    for (int h = 0; h < GROUP; ++h) {
        float mx = st.m[h];
#pragma unroll
        for (int j = 0; j < TOKENS; ++j) mx = fmaxf(mx, s[j][h]);
        const float ref = safe_max_ref(mx);
        const float corr = fast_exp2(st.m[h] - ref);
        float l = st.l[h] * corr;
#pragma unroll
        for (int e = 0; e < VEC; ++e) st.acc[h][e] *= corr;
#pragma unroll
        for (int j = 0; j < TOKENS; ++j) {
            s[j][h] = fast_exp2(s[j][h] - ref);  // now p
            l += s[j][h];
        }
        st.l[h] = l;
        st.m[h] = mx;
    }
#pragma unroll
    for (int j = 0; j < TOKENS; ++j) {
        float vf[VEC];
#pragma unroll
        for (int w = 0; w < W; ++w) unpack_word(T{}, vw[j][w], &vf[w * E]);
#pragma unroll
        for (int h = 0; h < GROUP; ++h)
#pragma unroll
            for (int e = 0; e < VEC; ++e) st.acc[h][e] = fmaf(s[j][h], vf[e], st.acc[h][e]);
    }
}

// Per-block constants of the token walk.
struct Walk {
    long long head_base;  // element offset of this (sequence, kv head) in k and v
    int start, end;       // this block's tokens [start, end)
    int steps;
    int stride;           // tokens from one block step to the next (the tensor-core walk)
    int gid;  // this lane's token group
    int d0;   // this lane's first element of the head dimension
};

template <int STEP, int GROUPS_PER_BLOCK>
__device__ __forceinline__ int token_of(const Walk& w, int step, int j) {
    return w.start + step * STEP + j * GROUPS_PER_BLOCK + w.gid;
}

// Byte offset in shared memory of this lane's chunk c of token j's K (kv 0) or V (kv 1) slice in a stage. Consecutive
// lanes hold consecutive chunks, so both the copies and the reads are free of bank conflicts.
template <typename S, int TOKENS>
__device__ __forceinline__ int slot(int stage, int kv, int j, int c, int tid) {
    return ((((stage * 2 + kv) * TOKENS + j) * S::CPS + c) * S::THREADS + tid) * S::CHUNK_BYTES;
}

// This lane's slice of q for the group's heads, pre-scaled into log2 units.
template <typename T, int HEAD_DIM, int GROUP, int VEC>
__device__ __forceinline__ void load_q(const T* qb, float qscale, float (&qf)[GROUP][VEC]) {
#pragma unroll
    for (int h = 0; h < GROUP; ++h)
#pragma unroll
        for (int e = 0; e < VEC; ++e) qf[h][e] = to_float(qb[h * HEAD_DIM + e]) * qscale;
}

// The pipelined walk: cp.async copies of this lane's slices, STAGES steps ahead. q is loaded after the first copies
// are issued, so its latency overlaps theirs.
template <typename T, int HEAD_DIM, int GROUP, int WARPS, int VEC, int TOKENS, int STAGES>
__device__ __forceinline__ void walk_pipelined(const Walk& wk, const T* __restrict__ k_cache,
                                               const T* __restrict__ v_cache, unsigned char* smem, const T* qb,
                                               float qscale, float (&qf)[GROUP][VEC], State<GROUP, VEC>& st) {
    using S = Shape<T, HEAD_DIM, GROUP, WARPS, VEC, TOKENS, STAGES>;
    constexpr int W = S::W;
    constexpr int CW = S::CHUNK_BYTES / 4;
    const T* kb = k_cache + wk.head_base;
    const T* vb = v_cache + wk.head_base;
    const int tid = threadIdx.x;
#pragma unroll 1
    for (int st0 = 0; st0 < STAGES; ++st0) {
        if (st0 < wk.steps) {
#pragma unroll
            for (int j = 0; j < TOKENS; ++j) {
                const int tok = token_of<S::STEP, S::GROUPS>(wk, st0, j);
                const bool valid = tok < wk.end;
                const long long off = valid ? static_cast<long long>(tok) * HEAD_DIM + wk.d0 : 0;
#pragma unroll
                for (int c = 0; c < S::CPS; ++c) {
                    cp_async<S::CHUNK_BYTES>(smem + slot<S, TOKENS>(st0, 0, j, c, tid),
                                             kb + off + c * (S::CHUNK_BYTES / 2), valid);
                    cp_async<S::CHUNK_BYTES>(smem + slot<S, TOKENS>(st0, 1, j, c, tid),
                                             vb + off + c * (S::CHUNK_BYTES / 2), valid);
                }
            }
        }
        cp_async_commit();
    }
    load_q<T, HEAD_DIM, GROUP, VEC>(qb, qscale, qf);
#pragma unroll 1
    for (int step = 0; step < wk.steps; ++step) {
        const int stage = step % STAGES;
        cp_async_wait<STAGES - 1>();  // this lane's copies of `step` have landed
        unsigned kw[TOKENS][W], vw[TOKENS][W];
        bool valid[TOKENS];
#pragma unroll
        for (int j = 0; j < TOKENS; ++j) {
            valid[j] = token_of<S::STEP, S::GROUPS>(wk, step, j) < wk.end;
#pragma unroll
            for (int c = 0; c < S::CPS; ++c) {
                const unsigned char* ks = smem + slot<S, TOKENS>(stage, 0, j, c, tid);
                const unsigned char* vs = smem + slot<S, TOKENS>(stage, 1, j, c, tid);
                if constexpr (CW == 4) {
                    const uint4 a = *reinterpret_cast<const uint4*>(ks);
                    const uint4 b = *reinterpret_cast<const uint4*>(vs);
                    kw[j][c * 4 + 0] = a.x;
                    kw[j][c * 4 + 1] = a.y;
                    kw[j][c * 4 + 2] = a.z;
                    kw[j][c * 4 + 3] = a.w;
                    vw[j][c * 4 + 0] = b.x;
                    vw[j][c * 4 + 1] = b.y;
                    vw[j][c * 4 + 2] = b.z;
                    vw[j][c * 4 + 3] = b.w;
                } else {
                    const uint2 a = *reinterpret_cast<const uint2*>(ks);
                    const uint2 b = *reinterpret_cast<const uint2*>(vs);
                    kw[j][c * 2 + 0] = a.x;
                    kw[j][c * 2 + 1] = a.y;
                    vw[j][c * 2 + 0] = b.x;
                    vw[j][c * 2 + 1] = b.y;
                }
            }
        }
        // Refill the stage just read (its values are in registers) with the step STAGES ahead.
        const int ahead = step + STAGES;
        if (ahead < wk.steps) {
#pragma unroll
            for (int j = 0; j < TOKENS; ++j) {
                const int tok = token_of<S::STEP, S::GROUPS>(wk, ahead, j);
                const bool ok = tok < wk.end;
                const long long off = ok ? static_cast<long long>(tok) * HEAD_DIM + wk.d0 : 0;
#pragma unroll
                for (int c = 0; c < S::CPS; ++c) {
                    cp_async<S::CHUNK_BYTES>(smem + slot<S, TOKENS>(stage, 0, j, c, tid),
                                             kb + off + c * (S::CHUNK_BYTES / 2), ok);
                    cp_async<S::CHUNK_BYTES>(smem + slot<S, TOKENS>(stage, 1, j, c, tid),
                                             vb + off + c * (S::CHUNK_BYTES / 2), ok);
                }
            }
        }
        cp_async_commit();
        attend<T, GROUP, VEC, TOKENS, S::TPT, W>(kw, vw, valid, qf, st);
    }
    cp_async_wait<0>();
}

// The fallback walk for misaligned k or v: element-wise loads straight into registers, no pipeline.
template <typename T, int HEAD_DIM, int GROUP, int WARPS, int VEC, int TOKENS, int STAGES>
__device__ __forceinline__ void walk_unaligned(const Walk& wk, const T* __restrict__ k_cache,
                                               const T* __restrict__ v_cache, const float (&qf)[GROUP][VEC],
                                               State<GROUP, VEC>& st) {
    using S = Shape<T, HEAD_DIM, GROUP, WARPS, VEC, TOKENS, STAGES>;
    constexpr int W = S::W;
    const unsigned short* kb = reinterpret_cast<const unsigned short*>(k_cache + wk.head_base);
    const unsigned short* vb = reinterpret_cast<const unsigned short*>(v_cache + wk.head_base);
#pragma unroll 1
    for (int step = 0; step < wk.steps; ++step) {
        unsigned kw[TOKENS][W], vw[TOKENS][W];
        bool valid[TOKENS];
#pragma unroll
        for (int j = 0; j < TOKENS; ++j) {
            const int tok = token_of<S::STEP, S::GROUPS>(wk, step, j);
            valid[j] = tok < wk.end;
            const long long off = valid[j] ? static_cast<long long>(tok) * HEAD_DIM + wk.d0 : 0;
#pragma unroll
            for (int w = 0; w < W; ++w) {
                kw[j][w] =
                    valid[j]
                        ? (static_cast<unsigned>(kb[off + 2 * w]) | (static_cast<unsigned>(kb[off + 2 * w + 1]) << 16))
                        : 0u;
                vw[j][w] =
                    valid[j]
                        ? (static_cast<unsigned>(vb[off + 2 * w]) | (static_cast<unsigned>(vb[off + 2 * w + 1]) << 16))
                        : 0u;
            }
        }
        attend<T, GROUP, VEC, TOKENS, S::TPT, W>(kw, vw, valid, qf, st);
    }
}

// ---- Tensor-core walk (ENGINE 2, 3) ---------------------------------------------------------------------------------
// Each warp takes tiles of 16 tokens (TOKENS tiles per step) and computes with mma.sync m16n8k16 (fp32 accumulate):
// S[16 heads x 8 tokens] = Q[16 x 16 d] . K^T and O[16 heads x 8 d] += P[16 x 16 tokens] . V. Heads are the M rows
// (GROUP <= 16; rows >= GROUP have q = 0 and are dropped), so the SIMT path's per-token shuffles and the exponentials
// repeated on every lane of a token group disappear: the walk stays memory-bound at GROUP 8. Fragment layouts: PTX ISA,
// "Matrix Fragments for mma.m16n8k16"; with g = lane / 4 and c = lane % 4 a thread holds S, O, P at rows g (and g + 8),
// columns 2c, 2c + 1 (and + 8). K and V tiles are copied by cp.async into warp-private shared memory, rows of HEAD_DIM
// elements with the 16-byte chunks XOR-swizzled by (row % 8), so ldmatrix reads are free of bank conflicts.

template <typename T>
inline constexpr bool is_half = false;
template <>
inline constexpr bool is_half<__half> = true;

template <typename T>
__device__ __forceinline__ unsigned pack2(float lo, float hi) {  // lo in the low half, as the fragments want
    unsigned r;
    if constexpr (is_half<T>)
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    else
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

// p as hi + lo in T: P . V in two mmas keeps p to ~2^-17 (bf16 p alone, 2^-9, fails the validation's atol on outputs
// near zero of short sequences).
template <typename T>
__device__ __forceinline__ void split2(float a, float b, unsigned& hi, unsigned& lo) {
    hi = pack2<T>(a, b);
    float ha, hb;
    if constexpr (is_half<T>) {
        asm("{ .reg .f16 x, y; mov.b32 {x, y}, %2; cvt.f32.f16 %0, x; cvt.f32.f16 %1, y; }"
            : "=f"(ha), "=f"(hb)
            : "r"(hi));
    } else {
        ha = __uint_as_float(hi << 16);
        hb = __uint_as_float(hi & 0xffff0000u);
    }
    lo = pack2<T>(a - ha, b - hb);
}

template <typename T>
__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    if constexpr (is_half<T>)
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <bool TRANS>
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
    if constexpr (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(addr));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(addr));
}

template <typename T, int HEAD_DIM, int WARPS, int TOKENS, int STAGES>
struct MmaShape {
    static constexpr int CPR = HEAD_DIM / 8;                            // 16-byte chunks per row
    static constexpr int TILE_BYTES = 16 * HEAD_DIM * int(sizeof(T));   // 16 tokens of K (or V)
    static constexpr int WARP_BYTES = STAGES * TOKENS * 2 * TILE_BYTES;  // one warp's stages
    static constexpr int STEP = WARPS * TOKENS * 16;                    // tokens per block per step
    static constexpr int NT = HEAD_DIM / 8;                              // n-tiles of O
    static constexpr int KS = HEAD_DIM / 16;                             // k-steps of S
};

// Byte offset of 16-byte chunk `chunk` within its row.
__device__ __forceinline__ int swz(int row, int chunk) { return (chunk ^ (row & 7)) << 4; }

// One warp's online-softmax state: O in C fragments, m and l for rows g and g + 8 (l partial per thread until the end).
template <int HEAD_DIM>
struct MmaState {
    float o[HEAD_DIM / 8][4];
    float m[2], l[2];
};

// An L2 policy that makes lines it touches the first to be evicted (PTX createpolicy): K and V are read once, so their
// lines should replace each other rather than whatever else the L2 holds (dirty lines cost a write-back each).
__device__ __forceinline__ unsigned long long evict_first_policy() {
    unsigned long long p;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
    return p;
}

// FAST (ENGINE 3): K and V copies carry the evict-first policy, and q's fragments are loaded before the first copies
// (the caller prefetched q and the first tiles into L2 while the sequence length was in flight).
template <typename T, int HEAD_DIM, int GROUP, int WARPS, int TOKENS, int STAGES, bool FAST>
__device__ __forceinline__ void walk_mma(const Walk& wk, const T* __restrict__ k_cache, const T* __restrict__ v_cache,
                                         unsigned char* smem, const T* qh, float qscale, MmaState<HEAD_DIM>& st) {
    using M = MmaShape<T, HEAD_DIM, WARPS, TOKENS, STAGES>;
    constexpr int ROWB = HEAD_DIM * int(sizeof(T));  // bytes per smem row
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, c = lane & 3;
    const T* kb = k_cache + wk.head_base;
    const T* vb = v_cache + wk.head_base;
    const unsigned wbase = smem_address(smem) + warp * M::WARP_BYTES;
    unsigned long long policy = 0;
    if constexpr (FAST) policy = evict_first_policy();
    // Tile (step, t) of this warp starts at token start + (step * WARPS + warp) * TOKENS * 16 + t * 16.
    auto issue = [&](int step, int stage) {
#pragma unroll
        for (int t = 0; t < TOKENS; ++t) {
            const int tile0 = wk.start + step * wk.stride + (warp * TOKENS + t) * 16;
            const unsigned kdst = wbase + ((stage * TOKENS + t) * 2) * M::TILE_BYTES;
#pragma unroll
            for (int i = 0; i < M::CPR / 2; ++i) {
                const int lin = lane + 32 * i, row = lin / M::CPR, ch = lin % M::CPR;
                const int tok = tile0 + row;
                const bool ok = tok < wk.end;
                const long long off = ok ? static_cast<long long>(tok) * HEAD_DIM + ch * 8 : 0;
                const unsigned d = kdst + row * ROWB + swz(row, ch);
                const int n = ok ? 16 : 0;
                if constexpr (FAST) {
                    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(d),
                                 "l"(kb + off), "r"(n), "l"(policy)
                                 : "memory");
                    asm volatile(
                        "cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(d + M::TILE_BYTES),
                        "l"(vb + off), "r"(n), "l"(policy)
                        : "memory");
                } else {
                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(kb + off), "r"(n)
                                 : "memory");
                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d + M::TILE_BYTES),
                                 "l"(vb + off), "r"(n)
                                 : "memory");
                }
            }
        }
    };

    // Q as A fragments (row-major 16 heads x 16 d per k-step), unscaled: the scale is applied to S in fp32.
    unsigned qa[M::KS][4];
    auto load_qa = [&]() {
        const unsigned short* q16 = reinterpret_cast<const unsigned short*>(qh);
        auto q2 = [&](int row, int col) -> unsigned {
            if (row >= GROUP) return 0u;
            return static_cast<unsigned>(q16[row * HEAD_DIM + col]) |
                   (static_cast<unsigned>(q16[row * HEAD_DIM + col + 1]) << 16);
        };
#pragma unroll
        for (int ks = 0; ks < M::KS; ++ks) {
            qa[ks][0] = q2(g, ks * 16 + 2 * c);
            qa[ks][1] = GROUP > 8 ? q2(g + 8, ks * 16 + 2 * c) : 0u;
            qa[ks][2] = q2(g, ks * 16 + 8 + 2 * c);
            qa[ks][3] = GROUP > 8 ? q2(g + 8, ks * 16 + 8 + 2 * c) : 0u;
        }
    };
    if constexpr (FAST) load_qa();  // q was prefetched: its loads go out first, the copies right behind them
#pragma unroll 1
    for (int s0 = 0; s0 < STAGES - 1; ++s0) {
        if (s0 < wk.steps) issue(s0, s0);
        cp_async_commit();
    }
    if constexpr (!FAST) load_qa();  // q's latency overlaps the first copies'

    constexpr int R = GROUP > 8 ? 2 : 1;  // rows of S this thread owns
    // ldmatrix addresses (per lane): matrix mi = lane / 8, its row lane % 8.
    const int mi = lane >> 3, r8 = lane & 7;
    const int krow = (mi >> 1) * 8 + r8, kch = mi & 1;  // K: (tokens 0-7 | 8-15) x (d lo | hi) of a k-step
    const int vrow = (mi & 1) * 8 + r8, vch = mi >> 1;  // V (trans): (tokens 0-7 | 8-15) x (n-tile 2j | 2j + 1)

#pragma unroll 1
    for (int step = 0; step < wk.steps; ++step) {
        const int ahead = step + STAGES - 1;
        if (ahead < wk.steps) issue(ahead, ahead % STAGES);
        cp_async_commit();
        cp_async_wait<STAGES - 1>();  // this lane's copies of `step` have landed
        __syncwarp();                 // ... and every lane's
        const int stage = step % STAGES;
#pragma unroll
        for (int t = 0; t < TOKENS; ++t) {
            const unsigned kt = wbase + ((stage * TOKENS + t) * 2) * M::TILE_BYTES;
            const unsigned vt = kt + M::TILE_BYTES;
            const int tile0 = wk.start + step * wk.stride + (warp * TOKENS + t) * 16;
            float s[2][4];
#pragma unroll
            for (int n = 0; n < 2; ++n)
#pragma unroll
                for (int e = 0; e < 4; ++e) s[n][e] = 0.0f;
#pragma unroll
            for (int ks = 0; ks < M::KS; ++ks) {
                unsigned b[4];
                ldmatrix_x4<false>(b, kt + krow * ROWB + swz(krow, ks * 2 + kch));
                mma16816<T>(s[0], qa[ks], b[0], b[1]);
                mma16816<T>(s[1], qa[ks], b[2], b[3]);
            }
            // Scores in log2 units; tokens past the end are -inf (their K and V were zero-filled).
            float corr[R];
#pragma unroll
            for (int r = 0; r < R; ++r) {
                float mx = st.m[r];
#pragma unroll
                for (int n = 0; n < 2; ++n)
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        const bool ok = tile0 + n * 8 + 2 * c + e < wk.end;
                        float& x = s[n][2 * r + e];
                        x = ok ? x * qscale : neg_inf();
                        mx = fmaxf(mx, x);
                    }
                mx = fmaxf(mx, __shfl_xor_sync(FULL_MASK, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(FULL_MASK, mx, 2));
                const float ref = safe_max_ref(mx);
                corr[r] = fast_exp2(st.m[r] - ref);
                float l = 0.0f;
#pragma unroll
                for (int n = 0; n < 2; ++n)
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        float& x = s[n][2 * r + e];
                        x = fast_exp2(x - ref);  // now p
                        l += x;
                    }
                st.l[r] = fmaf(st.l[r], corr[r], l);
                st.m[r] = mx;
            }
            // Rescale O only when some row's max moved (rare after the first tiles).
            bool moved = corr[0] != 1.0f;
            if constexpr (R == 2) moved = moved || corr[R - 1] != 1.0f;
            if (__any_sync(FULL_MASK, moved)) {
#pragma unroll
                for (int n = 0; n < M::NT; ++n)
#pragma unroll
                    for (int e = 0; e < 4; ++e) st.o[n][e] *= corr[(e >> 1) < R ? (e >> 1) : 0];
            }
            unsigned ph[4] = {0u, 0u, 0u, 0u}, pl[4] = {0u, 0u, 0u, 0u};
            split2<T>(s[0][0], s[0][1], ph[0], pl[0]);
            split2<T>(s[1][0], s[1][1], ph[2], pl[2]);
            if constexpr (R == 2) {
                split2<T>(s[0][2], s[0][3], ph[1], pl[1]);
                split2<T>(s[1][2], s[1][3], ph[3], pl[3]);
            }
#pragma unroll
            for (int j = 0; j < M::NT / 2; ++j) {
                unsigned b[4];
                ldmatrix_x4<true>(b, vt + vrow * ROWB + swz(vrow, 2 * j + vch));
                mma16816<T>(st.o[2 * j], ph, b[0], b[1]);
                mma16816<T>(st.o[2 * j + 1], ph, b[2], b[3]);
                mma16816<T>(st.o[2 * j], pl, b[0], b[1]);
                mma16816<T>(st.o[2 * j + 1], pl, b[2], b[3]);
            }
        }
        __syncwarp();  // every lane's reads of this stage are done before it is refilled
    }
    cp_async_wait<0>();  // copies past the end (zero-fill) land before the shared memory is reused
    // l: sum over the quad (fixed order).
#pragma unroll
    for (int r = 0; r < R; ++r) {
        st.l[r] += __shfl_xor_sync(FULL_MASK, st.l[r], 1);
        st.l[r] += __shfl_xor_sync(FULL_MASK, st.l[r], 2);
    }
}

// Merges the state of the partner lane `off` lanes away into this lane's (both end with the same bits).
template <int GROUP, int VEC>
__device__ __forceinline__ void merge_lanes(State<GROUP, VEC>& st, int off) {
#pragma unroll
    for (int h = 0; h < GROUP; ++h) {
        const float mo = __shfl_xor_sync(FULL_MASK, st.m[h], off);
        const float mx = fmaxf(st.m[h], mo);
        const float c = fast_exp2(st.m[h] - safe_max_ref(mx));
        const float l = st.l[h] * c;
        st.l[h] = l + __shfl_xor_sync(FULL_MASK, l, off);
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
            const float a = st.acc[h][e] * c;
            st.acc[h][e] = a + __shfl_xor_sync(FULL_MASK, a, off);
        }
        st.m[h] = mx;
    }
}

// Lanes that share one quad of the splits' merge: the largest power of two <= threads / quads, at most 32.
__host__ __device__ constexpr int merge_lanes_per_quad(int threads, int quads) {
    int r = 1;
    while (r < 32 && 2 * r * quads <= threads) r *= 2;
    return r;
}

// The splits' merge, run by every thread of each block after it wrote its partial (SPLITS > 1). The block that
// completes a (sequence, kv head) merges all SPLITS partials; the order of every sum is fixed by the split index, so
// the result does not depend on which block arrives last. smem: at least (2 * SPLITS + 1) * GROUP floats.
template <typename T, int HEAD_DIM, int GROUP, int WARPS, int SPLITS>
__device__ __forceinline__ void merge_splits(T* __restrict__ ob, const float* parts, unsigned* counter,
                                             unsigned char* smem) {
    namespace layout = ktune::decode_attention_layout;
    constexpr int THREADS = WARPS * 32;
    constexpr long long PH = layout::partial_head_floats(HEAD_DIM);
    constexpr long long PF = layout::partial_floats(GROUP, HEAD_DIM);
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    int* flag = reinterpret_cast<int*>(smem);
    // Publish this split, then count it.
    __threadfence();
    __syncthreads();
    if (tid == 0) {
        const bool last = atomicAdd(counter, 1u) == static_cast<unsigned>(SPLITS - 1);
        if (last) *counter = 0u;  // every split has arrived: nobody else touches it in this launch
        *flag = last;
    }
    __syncthreads();
    const bool last = *flag != 0;
    if (!last) return;  // uniform over the block
    __syncthreads();    // the flag is read before the weights overwrite it
    __threadfence();    // the other splits' partials, published before their arrivals, are seen

    // 1. Every split's (m, l) per head into shared memory, all loads at once.
    float* wts = reinterpret_cast<float*>(smem);  // [SPLITS][GROUP]: m, then the split's weight exp2(m - max)
    float* lws = wts + SPLITS * GROUP;            // [SPLITS][GROUP]: l
    float* ltot = lws + SPLITS * GROUP;           // [GROUP]: the merged l
#pragma unroll 4
    for (int i = tid; i < SPLITS * GROUP; i += THREADS) {
        const int sp = i / GROUP, h = i % GROUP;
        wts[i] = __ldcg(parts + sp * PF + h * PH + HEAD_DIM);
        lws[i] = __ldcg(parts + sp * PF + h * PH + HEAD_DIM + 1);
    }
    __syncthreads();
    // 2. One warp per head: the max over splits, each split's weight, and the merged l (lanes sum their splits in
    //    order, then a butterfly: a fixed order).
    for (int h = warp; h < GROUP; h += WARPS) {
        float mx = neg_inf();
        for (int sp = lane; sp < SPLITS; sp += 32) mx = fmaxf(mx, wts[sp * GROUP + h]);
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(FULL_MASK, mx, off));
        const float ref = safe_max_ref(mx);
        float l = 0.0f;
        for (int sp = lane; sp < SPLITS; sp += 32) {
            const float wgt = fast_exp2(wts[sp * GROUP + h] - ref);
            wts[sp * GROUP + h] = wgt;
            l = fmaf(lws[sp * GROUP + h], wgt, l);
        }
        l = warp_sum(l);
        if (lane == 0) ltot[h] = l;
    }
    __syncthreads();
    // 3. RT adjacent lanes per quad of outputs each sum every RT-th split (in split order), then a butterfly over the
    //    RT lanes: a fixed order, so the result does not depend on arrival; the loads of all threads are in flight
    //    together. Trip counts are uniform so every shuffle has the full warp.
    constexpr int NQ = GROUP * HEAD_DIM / 4;
    constexpr int RT = merge_lanes_per_quad(THREADS, NQ);
    const bool quads = is_aligned(parts, 16);
#pragma unroll 1
    for (int i0 = 0; i0 < NQ * RT; i0 += THREADS) {
        const int i = i0 + tid;
        const bool act = i < NQ * RT;
        const int qd = act ? i / RT : 0, r = i % RT;
        const int h = (4 * qd) / HEAD_DIM, d = (4 * qd) % HEAD_DIM;
        const float* p = parts + h * PH + d;
        float o[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (act) {
#pragma unroll 8
            for (int sp = r; sp < SPLITS; sp += RT) {
                const float wgt = wts[sp * GROUP + h];
                float v[4];
                if (quads) {
                    const float4 q4 = __ldcg(reinterpret_cast<const float4*>(p + sp * PF));
                    v[0] = q4.x, v[1] = q4.y, v[2] = q4.z, v[3] = q4.w;
                } else {
#pragma unroll
                    for (int e = 0; e < 4; ++e) v[e] = __ldcg(p + sp * PF + e);
                }
#pragma unroll
                for (int e = 0; e < 4; ++e) o[e] = fmaf(v[e], wgt, o[e]);
            }
        }
#pragma unroll
        for (int off = RT / 2; off > 0; off >>= 1)
#pragma unroll
            for (int e = 0; e < 4; ++e) o[e] += __shfl_xor_sync(FULL_MASK, o[e], off);
        if (act && r == 0) {
            const float l = ltot[h];
#pragma unroll
            for (int e = 0; e < 4; ++e) ob[h * HEAD_DIM + d + e] = from_float<T>(l > 0.0f ? o[e] / l : 0.0f);
        }
    }
}

// ENGINE 3's splits' merge: the same last-block pattern with a shorter dependent chain. One fence and one atomic by
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

// ENGINE 3: while the sequence's length is in flight, prefetch into L2 what the first STAGES - 1 block steps will copy
// (split s: steps s, s + SPLITS, ...; with the length unknown, as if the cache were full: only lines past a shorter
// sequence are wasted) and the group's q rows. Addresses stay inside the cache and q.
template <typename T, int HEAD_DIM, int GROUP, int WARPS, int TOKENS, int STAGES, int SPLITS>
__device__ __forceinline__ void prefetch_first_tiles(const T* kb, const T* vb, const T* qh, int max_len) {
    constexpr int ROWB = HEAD_DIM * int(sizeof(T));
    constexpr int LINES = 16 * ROWB / 128;  // 128-byte lines per 16-token tile
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    constexpr int STEP = WARPS * TOKENS * 16;
    const int start = min(max_len, static_cast<int>(blockIdx.x) * STEP);  // interleaved block steps (ENGINE 3)
    const int end = max_len;
    const char* kc = reinterpret_cast<const char*>(kb);
    const char* vc = reinterpret_cast<const char*>(vb);
#pragma unroll
    for (int s0 = 0; s0 < STAGES - 1; ++s0)
#pragma unroll
        for (int t = 0; t < TOKENS; ++t) {
            const int tile0 = start + s0 * SPLITS * STEP + (warp * TOKENS + t) * 16;
#pragma unroll
            for (int i = lane; i < LINES; i += 32) {
                const int tok = tile0 + i * 128 / ROWB;
                if (tok < end) {
                    const long long off = static_cast<long long>(tile0) * ROWB + i * 128;
                    asm volatile("prefetch.global.L2 [%0];" ::"l"(kc + off));
                    asm volatile("prefetch.global.L2 [%0];" ::"l"(vc + off));
                }
            }
        }
    constexpr int QB = GROUP * HEAD_DIM * int(sizeof(T));  // q's rows: QB / 128 lines, one more if q is unaligned
    if (warp == WARPS - 1)
        for (int i = lane; i <= QB / 128; i += 32) {
            const int off = i * 128 < QB - 2 ? i * 128 : QB - 2;  // the last element's line; inside q
            asm volatile("prefetch.global.L2 [%0];" ::"l"(reinterpret_cast<const char*>(qh) + off));
        }
}

// ---- ENGINE 4: the splits' merge through distributed shared memory -------------------------------------------------
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

// Declared here, not in the kernel: only ENGINE 4 instantiates it, so ENGINE 1-3 have no static shared memory.
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
// l) per quad as ENGINE 3 computes them for scratch, pushed to the quad's slice owner; quad dq < ranks(h) of head h
// also pushes (m, l) to rank rank_lo(h) + dq. Row `split` (blockIdx.x) of the receivers' buffers.
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

template <typename T, int HEAD_DIM, int GROUP, int WARPS, int VEC, int TOKENS, int STAGES, int SPLITS, int ENGINE>
__global__ void __cluster_dims__(ENGINE == 4 ? SPLITS : 1, 1, 1) __launch_bounds__(WARPS * 32)
    decode_attention_fwd(T* __restrict__ out, const T* __restrict__ q, const T* __restrict__ k_cache,
                         const T* __restrict__ v_cache, const int* __restrict__ seq_lens, float* __restrict__ scratch,
                         int batch, int q_heads, int kv_heads, int head_dim, int max_len, float scale, int max_splits) {
    static_assert(sizeof(T) == 2, "decode_attention_fwd: T is __half or __nv_bfloat16");
    static_assert(VEC == 4 || VEC == 8 || VEC == 16, "decode_attention_fwd: VEC is 4, 8 or 16");
    static_assert(HEAD_DIM % VEC == 0, "decode_attention_fwd: HEAD_DIM % VEC == 0");
    static_assert(HEAD_DIM / VEC <= 32 && ((HEAD_DIM / VEC) & (HEAD_DIM / VEC - 1)) == 0,
                  "decode_attention_fwd: HEAD_DIM / VEC is a power of two <= 32");
    static_assert(GROUP >= 1 && GROUP <= 16, "decode_attention_fwd: GROUP in [1, 16]");
    static_assert(WARPS >= 1 && WARPS <= 16, "decode_attention_fwd: WARPS in [1, 16]");
    static_assert(TOKENS >= 1 && TOKENS <= 8, "decode_attention_fwd: TOKENS in [1, 8]");
    static_assert(STAGES >= 1 && STAGES <= 8, "decode_attention_fwd: STAGES in [1, 8]");
    static_assert(SPLITS >= 1 && SPLITS <= ktune::decode_attention_layout::MAX_SPLITS,
                  "decode_attention_fwd: SPLITS in [1, 128]");
    static_assert(ENGINE >= 1 && ENGINE <= 4,
                  "decode_attention_fwd: ENGINE is 1 (SIMT), 2 (tensor cores), 3 (2 with the short chains) or 4 (3 "
                  "merging in a cluster)");
    static_assert(ENGINE == 1 || (HEAD_DIM % 64 == 0 && STAGES >= 2),
                  "decode_attention_fwd: ENGINE 2, 3 and 4 need HEAD_DIM % 64 == 0 and STAGES >= 2");
    static_assert(ENGINE != 4 || (SPLITS >= 2 && SPLITS <= 16),
                  "decode_attention_fwd: ENGINE 4 needs 2 <= SPLITS <= 16 (one cluster of SPLITS blocks)");
    constexpr bool MMA = ENGINE >= 2;
    constexpr bool FAST = ENGINE >= 3;
    constexpr bool CLUSTER_MERGE = ENGINE == 4;

    using namespace ktune::dev;
    using namespace ktune::dev::decode_attention;
    namespace layout = ktune::decode_attention_layout;
    using S = Shape<T, HEAD_DIM, GROUP, WARPS, VEC, TOKENS, STAGES>;
    using M = MmaShape<T, HEAD_DIM, WARPS, TOKENS, STAGES>;
    // The SIMT walk (ENGINE 1, or ENGINE 2, 3 on misaligned k or v: then with the fewest registers, VEC ignored).
    constexpr int SV = MMA ? (HEAD_DIM / 32 > 4 ? HEAD_DIM / 32 : 4) : VEC;
    constexpr int ST = MMA ? 1 : TOKENS;
    using SS = Shape<T, HEAD_DIM, GROUP, WARPS, SV, ST, STAGES>;
    // Shared memory: the pipeline's stages, then the warps' merge, then the splits' merge (weights and sums).
    constexpr int PIPE_BYTES = MMA ? WARPS * M::WARP_BYTES : S::PIPE_BYTES;
    constexpr int BLOCK_BYTES = PIPE_BYTES > S::MERGE_BYTES ? PIPE_BYTES : S::MERGE_BYTES;
    constexpr int SPLIT_BYTES = SPLITS > 1 && !CLUSTER_MERGE ? (2 * SPLITS + 1) * GROUP * 4 : 0;
    constexpr int SMEM_BYTES = BLOCK_BYTES > SPLIT_BYTES ? BLOCK_BYTES : SPLIT_BYTES;
    // ENGINE 4's receive buffer (static); the slices' pushes must match each receiver's expected bytes.
    constexpr int CS = CLUSTER_MERGE ? SPLITS : 2;
    constexpr int STATIC_BYTES = CLUSTER_MERGE ? int(sizeof(ClusterMergeBuffers<HEAD_DIM, GROUP, CS>)) : 0;
    static_assert(SMEM_BYTES + STATIC_BYTES <= 232448, "decode_attention_fwd: shared memory <= 227 KiB");
    static_assert(!CLUSTER_MERGE || ClusterSlices<HEAD_DIM, GROUP, CS>::consistent(),
                  "decode_attention_fwd: ENGINE 4's slices and byte counts disagree");
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
    if constexpr (FAST) {
        // The length's DRAM round trip is on every block's critical path: spend it fetching the first tiles.
        const long long hb = (static_cast<long long>(b) * kv_heads + hk) * max_len * HEAD_DIM;
        prefetch_first_tiles<T, HEAD_DIM, GROUP, WARPS, TOKENS, STAGES, SPLITS>(k_cache + hb, v_cache + hb, qh,
                                                                                max_len);
    }
    // ENGINE 4: the cluster (this (sequence, kv head)'s SPLITS blocks: grid x = cluster x = SPLITS) sets up its merge
    // right behind the first loads, so the cluster barrier's arrival overlaps the walk. The rank owns a slice of the
    // outputs; blockIdx.x stays the split (its tokens, its row in the receive buffers): nothing assumes the two equal.
    int rank = 0;
    if constexpr (CLUSTER_MERGE) {
        rank = cluster_rank<SPLITS>();
        cluster_merge_init<HEAD_DIM, GROUP, SPLITS>(rank);
    }
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

    // The tensor-core walk needs 16-byte aligned k and v; otherwise (and for ENGINE 1) the SIMT walk.
    const bool aligned16 = is_aligned(k_cache, 16) && is_aligned(v_cache, 16);
    bool done = false;
    if constexpr (MMA) {
        if (aligned16) {
            if constexpr (FAST) {
                // ENGINE 3: the splits take the block steps in turn (split s: steps s, s + SPLITS, ...), so at any
                // time a (sequence, kv head)'s blocks read one window of the cache instead of SPLITS distant ones.
                wk.start = min(len, split * M::STEP);
                wk.end = len;
                wk.stride = SPLITS * M::STEP;
                wk.steps = (len - wk.start + wk.stride - 1) / wk.stride;
            } else {
                wk.stride = M::STEP;
                wk.steps = (wk.end - wk.start + M::STEP - 1) / M::STEP;
            }
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
            walk_mma<T, HEAD_DIM, GROUP, WARPS, TOKENS, STAGES, FAST>(wk, k_cache, v_cache, smem, qh, qscale, st);
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
        bool piped = false;
        if constexpr (!MMA) {
            if (is_aligned(k_cache, S::CHUNK_BYTES) && is_aligned(v_cache, S::CHUNK_BYTES)) {
                walk_pipelined<T, HEAD_DIM, GROUP, WARPS, VEC, TOKENS, STAGES>(wk, k_cache, v_cache, smem,
                                                                               qh + wk.d0, qscale, qf, st);
                piped = true;
            }
        }
        if (!piped) {
            load_q<T, HEAD_DIM, GROUP, SV>(qh + wk.d0, qscale, qf);
            walk_unaligned<T, HEAD_DIM, GROUP, WARPS, SV, ST, STAGES>(wk, k_cache, v_cache, qf, st);
        }
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
    __syncthreads();

    T* ob = out + (static_cast<long long>(b) * q_heads + static_cast<long long>(hk) * GROUP) * HEAD_DIM;
    if constexpr (CLUSTER_MERGE) {
        // No scratch: the splits merge through the cluster's shared memory.
        cluster_merge_push<HEAD_DIM, GROUP, WARPS, SPLITS>(ms, ls, as, split);
        cluster_merge_slice<T, HEAD_DIM, GROUP, WARPS, SPLITS>(ob, rank);
    } else {
        constexpr long long PH = layout::partial_head_floats(HEAD_DIM);
        constexpr long long PF = layout::partial_floats(GROUP, HEAD_DIM);
        float* parts = scratch + layout::counter_words(batch, kv_heads) +
                       (static_cast<long long>(b) * kv_heads + hk) * SPLITS * PF;
        for (int i = tid; i < GROUP * HEAD_DIM; i += S::THREADS) {
            const int h = i / HEAD_DIM, d = i % HEAD_DIM;
            float mx = neg_inf();
#pragma unroll
            for (int w = 0; w < WARPS; ++w) mx = fmaxf(mx, ms[w * GROUP + h]);
            const float ref = safe_max_ref(mx);
            float o = 0.0f, l = 0.0f;
#pragma unroll
            for (int w = 0; w < WARPS; ++w) {
                const float c = fast_exp2(ms[w * GROUP + h] - ref);
                o = fmaf(as[(w * GROUP + h) * HEAD_DIM + d], c, o);
                l = fmaf(ls[w * GROUP + h], c, l);
            }
            if constexpr (SPLITS == 1) {
                ob[h * HEAD_DIM + d] = from_float<T>(l > 0.0f ? o / l : 0.0f);
            } else {
                float* p = parts + split * PF + h * PH;
                p[d] = o;
                if (d == 0) {
                    p[HEAD_DIM] = mx;
                    p[HEAD_DIM + 1] = l;
                }
            }
        }
        if constexpr (SPLITS > 1) {
            unsigned* counter = reinterpret_cast<unsigned*>(scratch) + static_cast<long long>(b) * kv_heads + hk;
            if constexpr (FAST)
                merge_splits_fast<T, HEAD_DIM, GROUP, WARPS, SPLITS>(ob, parts, counter, smem);
            else
                merge_splits<T, HEAD_DIM, GROUP, WARPS, SPLITS>(ob, parts, counter, smem);
        }
    }
}
