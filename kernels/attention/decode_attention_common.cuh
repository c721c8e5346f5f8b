#pragma once
// Decode attention (flash-decoding): what the four tuned kernels share. One query token per sequence against a KV
// cache:
//
//   out[b, hq, :] = softmax_t(scale * q[b, hq, :] . k[b, hk, t, :]) @ v[b, hk, :, :]     t < seq_lens[b]
//
// with grouped-query heads (hk = hq / GROUP) and per-sequence lengths (clamped to [0, L]; an empty sequence gives 0).
// Layouts and scratch: kernels/attention/decode_attention_layout.cuh. T: __half, __nv_bfloat16; scores, softmax and
// accumulation in fp32 (scores in log2 units: q is pre-scaled by scale * log2(e), exponentials are ex2.approx);
// out rounded once to T. The kernels, alternatives of search_spaces/decode_attention.yaml and
// decode_attention_gqa8.yaml (op decode_attention, variant fwd), take the same arguments: decode_attention_simt.cuh
// (SIMT token groups), decode_attention_mma.cuh (tensor cores), decode_attention_mma_l2.cuh (the tensor cores with the
// short chains that B = 1 needs) and decode_attention_mma_cluster.cuh (that, merging the splits in a thread-block
// cluster); reference: // kernels/attention/decode_attention_reference.cuh.
//
// Work split: block (split, kv head, sequence) = blockIdx (x, y, z). Each sequence's tokens are cut into SPLITS
// contiguous chunks of ceil(len / SPLITS) (the L2 kernels: the splits take the block steps in turn); a block reads its
// tokens of K and V once for all GROUP q heads of its kv head. The SIMT walk here: a "token group" of HEAD_DIM / VEC
// lanes owns one token at a time (each lane VEC elements of the head dimension); the block's WARPS * 32 / (HEAD_DIM /
// VEC) groups take consecutive tokens, TOKENS each per step. Every group keeps its own online-softmax state (running
// max m, sum l, accumulators) for the GROUP heads, so the main loop has no barrier. At the end the groups merge
// (shuffles within a warp, shared memory across warps), then the splits merge in the same launch: each block writes its
// (m, l, acc) to scratch, and the last block of a (sequence, kv head) to arrive (atomic counter, reset by that block)
// combines all SPLITS partials with all its threads, in an order fixed by the split index: deterministic
// (merge_splits; the cluster kernel merges otherwise). The tensor-core kernels fall back to the SIMT walk (with the
// fewest registers, VEC unused) where k or v is not 16-byte aligned.
//
// Tunables every kernel has (template parameters, named as the YAML keys):
//   HEAD_DIM  the head dimension D (a problem axis, repeated so the kernel holds rows in registers).
//   GROUP     q heads per kv head, HQ / HK (a problem axis, repeated): 1..16.
//   WARPS     warps per block, 1..16.
//   TOKENS    per pipeline step: tokens of each token group (SIMT), tiles of 16 tokens per warp (tensor cores).
//   STAGES    pipeline depth in steps (cp.async).
//   SPLITS    chunks per sequence (blocks along grid x), 1..128, at most max_splits(B, HK) of the layout (else the
//             kernel writes nothing).
//
// Launch: grid (SPLITS, HK, B), block WARPS * 32, dynamic shared memory of at least max(pipeline, warps' merge,
// splits' merge) bytes (each kernel says how many), at most 227 KiB (the YAML's shared_bytes; checked at run time:
// with too little the kernel writes nothing). Every kernel declares its cluster (__cluster_dims__): one block, the
// cluster kernel's SPLITS.
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
// The block's warps merged (ms, ls, as) into its partial of the (sequence b, kv head hk): straight to out (ob) when
// SPLITS is 1, else to this split's place in scratch (returned: the partials of the (sequence, kv head), for the
// splits' merge).
template <typename T, int HEAD_DIM, int GROUP, int WARPS, int SPLITS>
__device__ __forceinline__ float* write_partial(T* __restrict__ ob, float* __restrict__ scratch, const float* ms,
                                                const float* ls, const float* as, int batch, int kv_heads, int b,
                                                int hk, int split, int tid) {
    namespace layout = ktune::decode_attention_layout;
    constexpr long long PH = layout::partial_head_floats(HEAD_DIM);
    constexpr long long PF = layout::partial_floats(GROUP, HEAD_DIM);
    float* parts = scratch + layout::counter_words(batch, kv_heads) +
                   (static_cast<long long>(b) * kv_heads + hk) * SPLITS * PF;
    for (int i = tid; i < GROUP * HEAD_DIM; i += WARPS * 32) {
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
    return parts;
}


}  // namespace ktune::dev::decode_attention
