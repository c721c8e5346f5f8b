#pragma once
// Decode attention: the tensor-core walk the three tensor-core kernels share (decode_attention_mma.cuh, _mma_l2.cuh,
// _mma_cluster.cuh), and the L2 prefetch of the last two. Operation, layouts and the SIMT walk they fall back to:
// decode_attention_common.cuh.
//
// Each warp takes tiles of 16 tokens (TOKENS tiles per step) and computes with mma.sync m16n8k16 (fp32 accumulate):
// S[16 heads x 8 tokens] = Q[16 x 16 d] . K^T and O[16 heads x 8 d] += P[16 x 16 tokens] . V. Heads are the M rows
// (GROUP <= 16; rows >= GROUP have q = 0 and are dropped), so the SIMT path's per-token shuffles and the exponentials
// repeated on every lane of a token group disappear: the walk stays memory-bound at GROUP 8. Fragment layouts: PTX ISA,
// "Matrix Fragments for mma.m16n8k16"; with g = lane / 4 and c = lane % 4 a thread holds S, O, P at rows g (and g + 8),
// columns 2c, 2c + 1 (and + 8). K and V tiles are copied by cp.async into warp-private shared memory, rows of HEAD_DIM
// elements with the 16-byte chunks XOR-swizzled by (row % 8), so ldmatrix reads are free of bank conflicts.
#include "kernels/attention/decode_attention_common.cuh"

namespace ktune::dev::decode_attention {

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

// FAST (the L2 kernels): K and V copies carry the evict-first policy, and q's fragments are loaded before the first
// copies (the caller prefetched q and the first tiles into L2 while the sequence length was in flight).
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


// The SIMT walk's vector width where the tensor-core kernels fall back to it (misaligned k or v): the fewest registers.
template <int HEAD_DIM>
inline constexpr int FALLBACK_VEC = HEAD_DIM / 32 > 4 ? HEAD_DIM / 32 : 4;

// This block's walk in the tensor-core kernels, then each warp's state into ms, ls, as (shared memory: the pipelines',
// drained): the tensor-core walk where k and v are 16-byte aligned, else the SIMT walk (FALLBACK_VEC, one token per
// step, no pipeline; wk.gid and wk.d0 set for that shape). wk: this split's contiguous chunk [start, end); FAST: the
// splits take the block steps in turn instead, with walk_mma's FAST.
template <typename T, int HEAD_DIM, int GROUP, int WARPS, int TOKENS, int STAGES, int SPLITS, bool FAST>
__device__ __forceinline__ void walk_with_fallback(Walk& wk, int len, int split, const T* __restrict__ k_cache,
                                                   const T* __restrict__ v_cache, unsigned char* smem, const T* qh,
                                                   float qscale, float* ms, float* ls, float* as, int warp, int lane) {
    using M = MmaShape<T, HEAD_DIM, WARPS, TOKENS, STAGES>;
    constexpr int SV = FALLBACK_VEC<HEAD_DIM>;
    using SS = Shape<T, HEAD_DIM, GROUP, WARPS, SV, 1, STAGES>;
    const bool aligned16 = is_aligned(k_cache, 16) && is_aligned(v_cache, 16);
    bool done = false;
    if (aligned16) {
        if constexpr (FAST) {
            // The splits take the block steps in turn (split s: steps s, s + SPLITS, ...), so at any time a
            // (sequence, kv head)'s blocks read one window of the cache instead of SPLITS distant ones.
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
}

// The L2 kernels: while the sequence's length is in flight, prefetch into L2 what the first STAGES - 1 block steps will
// copy (split s: steps s, s + SPLITS, ...; with the length unknown, as if the cache were full: only lines past a
// shorter sequence are wasted) and the group's q rows. Addresses stay inside the cache and q.
template <typename T, int HEAD_DIM, int GROUP, int WARPS, int TOKENS, int STAGES, int SPLITS>
__device__ __forceinline__ void prefetch_first_tiles(const T* kb, const T* vb, const T* qh, int max_len) {
    constexpr int ROWB = HEAD_DIM * int(sizeof(T));
    constexpr int LINES = 16 * ROWB / 128;  // 128-byte lines per 16-token tile
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    constexpr int STEP = WARPS * TOKENS * 16;
    const int start = min(max_len, static_cast<int>(blockIdx.x) * STEP);  // interleaved block steps (the L2 kernels)
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

}  // namespace ktune::dev::decode_attention
