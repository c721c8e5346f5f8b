#pragma once
// Rotary position embedding (RoPE) on q and k, in place, in one launch.
//
// For every token t, every head of q ([tokens, heads_q, head_dim], rows q_token_stride elements apart) and of k
// ([tokens, heads_k, head_dim], k_token_stride apart), the first rotary_dim elements of the head are rotated by the
// angles of position p = positions[t]; elements rotary_dim.. of each head are neither read nor written. With
// half = rotary_dim / 2, c = cos_cache[p * half + i], s = sin_cache[p * half + i] (fp32 caches [max_pos, half]):
//   Style::neox (rotate-half, GPT-NeoX / Llama): pair i <  half is (x[i], x[i + half])
//   Style::gptj (interleaved, GPT-J):            pair i <  half is (x[2i], x[2i + 1])
//   (a, b) -> (a * c - b * s, b * c + a * s)
// Math in fp32, each output rounded once to T (float, __half, __nv_bfloat16). positions must lie in [0, max_pos).
// Driven by search_spaces/rope_neox.yaml and rope_gptj.yaml (op rope, variants neox and gptj); reference:
// kernels/rope/rope_reference.cuh (same arguments).
//
// Work item: one token, one head, and VEC pairs. Both styles touch the same addresses: an item c reads and writes the
// VEC elements at c * VEC and the VEC elements at half + c * VEC of its head (two aligned accesses); for neox they hold
// VEC pairs split across the halves, for gptj VEC / 2 whole pairs each. So both styles coalesce alike and read
// VEC cos and VEC sin values per item (from L1/L2: the cache rows are shared by every head of a token).
//
// Tunables (template parameters, named as the YAML keys):
//   BLOCK             threads per block: a multiple of 32 in [32, 1024].
//   VEC               elements per access, a power of two with 8 <= VEC * sizeof(T) <= 16 (8- and 16-byte accesses;
//                     narrower ones never win on a memory-bound kernel). Items hold VEC pairs.
//   TOKENS_PER_BLOCK  tokens a block rotates, >= 1: its items (TOKENS_PER_BLOCK * (heads_q + heads_k) * half / VEC)
//                     are dealt to the block's threads in order, so heads and tokens share one balanced loop.
//   UNROLL            items each thread has in flight at once (all loads before the first store), in [1, 8];
//                     VEC * UNROLL <= 16 bounds the registers (two accesses and 2 * VEC floats per item): about 30
//                     at UNROLL 1, up to ~120 at VEC * UNROLL = 16.
//   ISSUE             load order, 1 or 2. 1: item by item, its position first (the throughput path, tuned at large M).
//                     2: the decode path (rotate_group_early): all q/k loads of a pass, then the position, then
//                     cos/sin, index math by fp32 reciprocals; two dependent DRAM trips per pass instead of two per
//                     pass plus a division prologue. The YAML gives it one-pass configurations at M <= 256.
//
// Measured on an H100 (cold L2): neox bf16 M = 32768, 32/8 heads x 128 at 2886 GB/s (96 % of copy), gptj 2775; at
// M = 4096 about 2450. Open question: gptj with head_dim 64, 16-bit T, VEC 8 and UNROLL 1 runs at ~780 GB/s,
// reproducibly, while UNROLL 2 or VEC 4 reach 2455 and neox with the same addresses 2800; the tuner steps around it.
//
// Launch: block = BLOCK threads (1-D), any grid: blocks loop over groups of TOKENS_PER_BLOCK tokens (grid stride), so
// ceil_div(M, TOKENS_PER_BLOCK) blocks give one group each. No shared memory.
//
// Any shape with rotary_dim even, 2 <= rotary_dim <= head_dim, is correct. The vector path needs half % VEC == 0,
// head_dim and both token strides multiples of VEC, q and k aligned to VEC * sizeof(T) bytes and the caches to 16
// bytes (checked once per launch); otherwise every item is one pair moved with element accesses (scalar path).
#include "kernels/common/ktune_device.cuh"
#include "kernels/rope/fast_divmod.cuh"
#include "kernels/rope/rope_style.cuh"

namespace ktune::dev::rope {

// What every item needs, computed once per launch.
template <typename T>
struct Ctx {
    T* q;
    T* k;
    const int* positions;
    const float* cos_cache;
    const float* sin_cache;
    int heads_q;
    int head_dim;
    int half;  // rotary_dim / 2
    long long q_token_stride;
    long long k_token_stride;
};

// The start of head h (q heads first, then k heads) of token t.
template <typename T>
__device__ __forceinline__ T* head_ptr(const Ctx<T>& a, long long t, int h) {
    return h < a.heads_q ? a.q + t * a.q_token_stride + static_cast<long long>(h) * a.head_dim
                         : a.k + t * a.k_token_stride + static_cast<long long>(h - a.heads_q) * a.head_dim;
}

// N consecutive floats; p is aligned to min(N, 4) * 4 bytes.
template <int N>
__device__ __forceinline__ void load_floats(const float* p, float* f) {
    if constexpr (N >= 4) {
#pragma unroll
        for (int j = 0; j < N; j += 4) {
            const Vec<float, 4> v = load_vec<float, 4>(p + j);
#pragma unroll
            for (int e = 0; e < 4; ++e) f[j + e] = v.v[e];
        }
    } else {
        const Vec<float, N> v = load_vec<float, N>(p);
#pragma unroll
        for (int e = 0; e < N; ++e) f[e] = v.v[e];
    }
}

template <typename T, int W>
__device__ __forceinline__ void unpack(const Words<W>& w, float* f) {
    constexpr int E = elems_per_word<T>;
#pragma unroll
    for (int j = 0; j < W; ++j) unpack_word(T{}, w.w[j], f + j * E);
}

template <typename T, int W>
__device__ __forceinline__ Words<W> pack(const float* f) {
    constexpr int E = elems_per_word<T>;
    Words<W> w;
#pragma unroll
    for (int j = 0; j < W; ++j) w.w[j] = pack_word<T>(f + j * E);
    return w;
}

__device__ __forceinline__ void rotate(float& a, float& b, float c, float s) {
    const float ra = fmaf(a, c, -b * s);
    const float rb = fmaf(b, c, a * s);
    a = ra;
    b = rb;
}

// Loads the cos/sin of vector item c of a token at position row / half into cs, sn (the order rotate_store takes):
// neox, VEC consecutive pairs; gptj, pairs c*VEC/2.. for the first access and (half + c*VEC)/2.. for the second.
// Shared by both vector paths.
template <Style S, typename T, int VEC>
__device__ __forceinline__ void load_cos_sin(const Ctx<T>& a, long long row, unsigned c, float* cs, float* sn) {
    if constexpr (S == Style::neox) {
        load_floats<VEC>(a.cos_cache + row + c * VEC, cs);
        load_floats<VEC>(a.sin_cache + row + c * VEC, sn);
    } else {
        const long long i0 = row + c * (VEC / 2), i1 = i0 + a.half / 2;
        load_floats<VEC / 2>(a.cos_cache + i0, cs);
        load_floats<VEC / 2>(a.cos_cache + i1, cs + VEC / 2);
        load_floats<VEC / 2>(a.sin_cache + i0, sn);
        load_floats<VEC / 2>(a.sin_cache + i1, sn + VEC / 2);
    }
}

// Rotates one vector item (xa read at lo, xb at lo + half; cs/sn as load_cos_sin loads them) and stores it; shared by
// both vector paths.
template <Style S, typename T, int VEC, int W>
__device__ __forceinline__ void rotate_store(T* lo, int half, const Words<W>& xa, const Words<W>& xb, const float* cs,
                                             const float* sn) {
    float fa[VEC], fb[VEC];
    unpack<T, W>(xa, fa);
    unpack<T, W>(xb, fb);
    if constexpr (S == Style::neox) {
#pragma unroll
        for (int j = 0; j < VEC; ++j) rotate(fa[j], fb[j], cs[j], sn[j]);
    } else {
#pragma unroll
        for (int j = 0; j < VEC / 2; ++j) {
            rotate(fa[2 * j], fa[2 * j + 1], cs[j], sn[j]);
            rotate(fb[2 * j], fb[2 * j + 1], cs[VEC / 2 + j], sn[VEC / 2 + j]);
        }
    }
    store_words<W>(lo, pack<T, W>(fa));
    store_words<W>(lo + half, pack<T, W>(fb));
}

// The vector path: VEC-element accesses, UNROLL items per thread in flight. Items of the block's token group are
// numbered f = ((token - first) * heads + head) * chunks + c, chunks = half / VEC.
template <Style S, typename T, int BLOCK, int VEC, int UNROLL>
__device__ __forceinline__ void rotate_group_vector(const Ctx<T>& a, long long first, unsigned items,
                                                    const FastDivmod& by_chunks, const FastDivmod& by_heads) {
    constexpr int W = VEC * int(sizeof(T)) / 4;
    for (unsigned f0 = threadIdx.x; f0 < items; f0 += BLOCK * UNROLL) {
        T* lo[UNROLL];
        Words<W> xa[UNROLL], xb[UNROLL];
        float cs[UNROLL][VEC], sn[UNROLL][VEC];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const unsigned f = f0 + u * BLOCK;
            lo[u] = nullptr;
            if (f < items) {
                unsigned c, h;
                const unsigned th = by_chunks.divmod(f, c);
                const unsigned t = by_heads.divmod(th, h);
                const long long token = first + t;
                lo[u] = head_ptr(a, token, static_cast<int>(h)) + c * VEC;
                xa[u] = load_words<W>(lo[u]);
                xb[u] = load_words<W>(lo[u] + a.half);
                load_cos_sin<S, T, VEC>(a, static_cast<long long>(a.positions[token]) * a.half, c, cs[u], sn[u]);
            }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (lo[u] == nullptr) continue;
            rotate_store<S, T, VEC, W>(lo[u], a.half, xa[u], xb[u], cs[u], sn[u]);
        }
    }
}

// The scalar path: one pair per item (chunks = half), element accesses.
template <Style S, typename T, int BLOCK, int UNROLL>
__device__ __forceinline__ void rotate_group_scalar(const Ctx<T>& a, long long first, unsigned items,
                                                    const FastDivmod& by_chunks, const FastDivmod& by_heads) {
    for (unsigned f0 = threadIdx.x; f0 < items; f0 += BLOCK * UNROLL) {
        T* pa[UNROLL];
        T* pb[UNROLL];
        float xa[UNROLL], xb[UNROLL], cs[UNROLL], sn[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const unsigned f = f0 + u * BLOCK;
            pa[u] = nullptr;
            if (f < items) {
                unsigned i, h;
                const unsigned th = by_chunks.divmod(f, i);
                const unsigned t = by_heads.divmod(th, h);
                const long long token = first + t;
                T* head = head_ptr(a, token, static_cast<int>(h));
                pa[u] = S == Style::neox ? head + i : head + 2 * i;
                pb[u] = S == Style::neox ? head + i + a.half : head + 2 * i + 1;
                xa[u] = to_float(*pa[u]);
                xb[u] = to_float(*pb[u]);
                const long long row = static_cast<long long>(a.positions[token]) * a.half;
                cs[u] = a.cos_cache[row + i];
                sn[u] = a.sin_cache[row + i];
            }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (pa[u] == nullptr) continue;
            rotate(xa[u], xb[u], cs[u], sn[u]);
            *pa[u] = from_float<T>(xa[u]);
            *pb[u] = from_float<T>(xb[u]);
        }
    }
}

// ---- ISSUE = 2: the decode path -----------------------------------------------------------------------------------
//
// At a few tokens the kernel is latency-bound: its time is the chain of dependent global-memory round trips
// (~0.6-0.8 us each from DRAM), not bytes. The path above (ISSUE = 1) computes an item's address with branches and
// loads its position first; ptxas then places the q/k loads after the first use of the position, so a pass costs two
// trips (position, then q/k with cos/sin), one-pass configurations were not in the space (40 heads x 2^k chunks never
// fit a power-of-two BLOCK * UNROLL), and the prologue builds two FastDivmods (a bit loop and a division).
// This path issues, for all UNROLL items of the pass: the q/k loads (independent of the position), then the position
// loads, and only then touches the position to issue the cos/sin loads. The q/k trip overlaps the position ->
// cos/sin chain: two trips per pass in all, the floor for a position-indexed cache. With BLOCK * UNROLL >= the
// items of a token group (the YAML asks for one pass), a launch is ~ the empty kernel plus two trips.
// The index math needs no integer division: quotients by the launch-invariant divisors from an fp32 reciprocal,
// corrected by one step (div_by_rcp), and branch-free selects for q or k, so the loads are not behind branches.

// floor(n / d) and n % d for d >= 1, n < 2^30 and n / d <= 2^20, given rcp ~ 1 / d (rcp.approx: < 1 ulp). With the
// roundings of n to float and of the product (< 1 ulp each), n * rcp is within (n / d) * 2^-21.4 < 0.4 of n / d, so
// its truncation is off by at most one: one signed correction step makes it exact.
__device__ __forceinline__ unsigned div_by_rcp(unsigned n, unsigned d, float rcp, unsigned& rem) {
    int q = static_cast<int>(__fmul_rz(__uint2float_rn(n), rcp));
    int r = static_cast<int>(n) - q * static_cast<int>(d);
    if (r < 0) {
        --q;
        r += static_cast<int>(d);
    } else if (r >= static_cast<int>(d)) {
        ++q;
        r -= static_cast<int>(d);
    }
    rem = static_cast<unsigned>(r);
    return static_cast<unsigned>(q);
}

__device__ __forceinline__ float approx_rcp(unsigned d) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(__uint2float_rn(d)));
    return r;
}

// The split of one group's items f = ((token - first) * heads + head) * chunks + c, from reciprocals.
struct EarlySplit {
    unsigned per_token;  // heads * chunks
    unsigned chunks;
    float rcp_per_token;
    float rcp_chunks;
};

template <Style S, typename T, int BLOCK, int VEC, int TOKENS_PER_BLOCK, int UNROLL>
__device__ __forceinline__ void rotate_group_early(const Ctx<T>& a, long long first, unsigned items,
                                                   const EarlySplit& sp) {
    constexpr int W = VEC * int(sizeof(T)) / 4;
    for (unsigned f0 = threadIdx.x; f0 < items; f0 += BLOCK * UNROLL) {
        T* lo[UNROLL];
        long long token[UNROLL];
        unsigned c[UNROLL];
        bool ok[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const unsigned f = f0 + u * BLOCK;
            ok[u] = f < items;
            unsigned t = 0, r = f, h;
            if constexpr (TOKENS_PER_BLOCK > 1) t = div_by_rcp(f, sp.per_token, sp.rcp_per_token, r);
            h = div_by_rcp(r, sp.chunks, sp.rcp_chunks, c[u]);
            token[u] = first + t;
            // q or k by selects (no branch between the loads)
            const bool in_q = static_cast<int>(h) < a.heads_q;
            T* base = in_q ? a.q : a.k;
            const long long stride = in_q ? a.q_token_stride : a.k_token_stride;
            const int hh = in_q ? static_cast<int>(h) : static_cast<int>(h) - a.heads_q;
            lo[u] = base + token[u] * stride + static_cast<long long>(hh) * a.head_dim + c[u] * VEC;
        }
        // 1. q/k, independent of the position
        Words<W> xa[UNROLL], xb[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (ok[u]) {
                xa[u] = load_words<W>(lo[u]);
                xb[u] = load_words<W>(lo[u] + a.half);
            }
        }
        // 2. positions, loaded here, in the pass, so that no use of one is hoisted above the q/k loads (a use waits
        // for the load: that would put the q/k trip behind the position trip). One token: one load (first < tokens);
        // several: one per item, L1 hits after the first of a token.
        int pos[UNROLL];
        const int pos_first = TOKENS_PER_BLOCK == 1 ? __ldg(a.positions + first) : 0;
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if constexpr (TOKENS_PER_BLOCK == 1)
                pos[u] = pos_first;
            else
                pos[u] = ok[u] ? __ldg(a.positions + token[u]) : 0;
        }
        // 3. cos/sin rows: the first instructions that wait for a load
        float cs[UNROLL][VEC], sn[UNROLL][VEC];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (!ok[u]) continue;
            load_cos_sin<S, T, VEC>(a, static_cast<long long>(pos[u]) * a.half, c[u], cs[u], sn[u]);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (!ok[u]) continue;
            rotate_store<S, T, VEC, W>(lo[u], a.half, xa[u], xb[u], cs[u], sn[u]);
        }
    }
}

}  // namespace ktune::dev::rope

template <typename T, ktune::dev::rope::Style STYLE, int BLOCK, int VEC, int TOKENS_PER_BLOCK, int UNROLL, int ISSUE>
__global__ void __launch_bounds__(BLOCK)
    rope_fwd(T* __restrict__ q, T* __restrict__ k, const int* __restrict__ positions, const float* __restrict__ cos_cache,
             const float* __restrict__ sin_cache, int tokens, int heads_q, int heads_k, int head_dim, int rotary_dim,
             long long q_token_stride, long long k_token_stride) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 2, "rope_fwd: T is float, __half or __nv_bfloat16");
    static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0, "rope_fwd: BLOCK a multiple of 32 in [32, 1024]");
    static_assert(VEC >= 1 && (VEC & (VEC - 1)) == 0, "rope_fwd: VEC is a power of two");
    static_assert(VEC * sizeof(T) <= 16, "rope_fwd: VEC * sizeof(T) <= 16");
    static_assert(VEC * sizeof(T) >= 8, "rope_fwd: VEC * sizeof(T) >= 8 (narrower accesses are not tuned)");
    static_assert(TOKENS_PER_BLOCK >= 1, "rope_fwd: TOKENS_PER_BLOCK >= 1");
    static_assert(UNROLL >= 1 && UNROLL <= 8, "rope_fwd: UNROLL in [1, 8]");
    static_assert(VEC * UNROLL <= 16, "rope_fwd: VEC * UNROLL <= 16 (registers)");
    static_assert(ISSUE == 1 || ISSUE == 2, "rope_fwd: ISSUE is 1 or 2");
    static_assert(ISSUE == 1 || TOKENS_PER_BLOCK <= 1024, "rope_fwd: ISSUE 2 splits items of <= 2^30 in 32 bits");

    using namespace ktune::dev;
    using rope::Style;
    const rope::Ctx<T> a{q, k, positions, cos_cache, sin_cache, heads_q, head_dim, rotary_dim / 2, q_token_stride,
                         k_token_stride};
    const int heads = heads_q + heads_k;
    constexpr unsigned VEC_BYTES = VEC * sizeof(T);
    const bool vector_ok = a.half % VEC == 0 && head_dim % VEC == 0 && q_token_stride % VEC == 0 &&
                           k_token_stride % VEC == 0 && is_aligned(q, VEC_BYTES) && is_aligned(k, VEC_BYTES) &&
                           is_aligned(cos_cache, 16) && is_aligned(sin_cache, 16);
    // Uniform over the grid: one path per launch.
    if constexpr (ISSUE == 2) {
        if (vector_ok) {
            const unsigned chunks = static_cast<unsigned>(a.half / VEC);
            const unsigned per_token = static_cast<unsigned>(heads) * chunks;
            const rope::EarlySplit sp{per_token, chunks, rope::approx_rcp(per_token), rope::approx_rcp(chunks)};
            for (long long first = static_cast<long long>(blockIdx.x) * TOKENS_PER_BLOCK; first < tokens;
                 first += static_cast<long long>(gridDim.x) * TOKENS_PER_BLOCK) {
                const long long left = tokens - first;
                const unsigned items =
                    per_token * static_cast<unsigned>(left < TOKENS_PER_BLOCK ? left : TOKENS_PER_BLOCK);
                rope::rotate_group_early<STYLE, T, BLOCK, VEC, TOKENS_PER_BLOCK, UNROLL>(a, first, items, sp);
            }
            return;
        }  // else the scalar path below, as with ISSUE = 1
    }
    const int chunks = vector_ok ? a.half / VEC : a.half;
    const FastDivmod by_chunks(static_cast<unsigned>(chunks)), by_heads(static_cast<unsigned>(heads));
    const unsigned per_token = static_cast<unsigned>(heads) * static_cast<unsigned>(chunks);
    for (long long first = static_cast<long long>(blockIdx.x) * TOKENS_PER_BLOCK; first < tokens;
         first += static_cast<long long>(gridDim.x) * TOKENS_PER_BLOCK) {
        const long long left = tokens - first;
        const unsigned items = per_token * static_cast<unsigned>(left < TOKENS_PER_BLOCK ? left : TOKENS_PER_BLOCK);
        if (vector_ok)
            rope::rotate_group_vector<STYLE, T, BLOCK, VEC, UNROLL>(a, first, items, by_chunks, by_heads);
        else
            rope::rotate_group_scalar<STYLE, T, BLOCK, UNROLL>(a, first, items, by_chunks, by_heads);
    }
}
