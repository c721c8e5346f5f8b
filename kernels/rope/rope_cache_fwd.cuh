#pragma once
// RoPE and the KV-cache write of a decode step, in one launch (op rope/neox_cache: kernels/rope/rope_neox_cache.op.yaml;
// search space: search_spaces/rope_neox_cache.yaml; reference: kernels/rope/rope_cache_reference.cuh, same arguments).
//
// Token t (t < tokens) is the new token of sequence t, at position p = positions[t]. With half = rotary_dim / 2,
// c = cos_cache[p * half + i], s = sin_cache[p * half + i] (fp32 caches [max_pos, half]) and rotate-half pairs
// (x[i], x[i + half]) -> (a * c - b * s, b * c + a * s) (GPT-NeoX / Llama):
//   q[t, h, :]  rotated in place ([tokens, heads_q, head_dim], rows q_token_stride apart; dims rotary_dim.. untouched);
//   k[t, h, :]  rotated into k_cache[t, h, p, :] (k not written; dims rotary_dim.. copied as they are);
//   v[t, h, :]  copied into v_cache[t, h, p, :].
// The caches are [tokens, heads_k, cache_len, head_dim] contiguous; no other cache row is touched. Math in fp32, each
// rotated output rounded once to T (float, __half, __nv_bfloat16). positions must lie in [0, min(max_pos, cache_len)).
//
// Work items of a token, in this order: (q head, VEC pairs) and (k head, VEC pairs) rotations (two accesses, at
// c * VEC and half + c * VEC of the head, as rope_fwd.cuh's items), then per k/v head the copies of VEC elements, k's
// dims rotary_dim.. first, then v's head. A token's items are cut into SPLIT parts of ceil(items / SPLIT), one part per
// block. The kernel is a chain of latencies at decode: a pass issues the q/k/v loads of all its items (their addresses
// need no position), then the position load, then the cos/sin loads (which need it), and stores last: two dependent
// DRAM trips. Cache addresses need the position only at the store.
//
// Tunables (template parameters, named as the YAML keys):
//   BLOCK   threads per block: a multiple of 32 in [32, 1024].
//   VEC     elements per access, a power of two with 8 <= VEC * sizeof(T) <= 16 (8- and 16-byte accesses).
//   UNROLL  items each thread has in flight at once (all loads before the first store), in [1, 8]; VEC * UNROLL <= 16
//           bounds the registers (two accesses and 2 * VEC floats per item).
//   SPLIT   blocks per token, in [1, 64]: more blocks in flight for a small batch, fewer items per block.
//
// Launch: block = BLOCK threads (1-D), any grid: blocks loop over the tokens * SPLIT (token, part) groups (grid stride),
// so tokens * SPLIT blocks give one group each. No shared memory.
//
// Any shape with rotary_dim even, 2 <= rotary_dim <= head_dim, (heads_q + 2 * heads_k) * head_dim <= 2^20 is correct.
// The vector path needs half % VEC == 0, head_dim and the three token strides multiples of VEC, q, k, v and the caches
// aligned to VEC * sizeof(T) bytes and the cos/sin caches to 16 bytes (checked once per launch); otherwise every item
// is one pair or one element moved with element accesses (scalar path).
#include "kernels/common/dependent_launch.cuh"
#include "kernels/common/ktune_device.cuh"
#include "kernels/rope/rope_fwd.cuh"  // load_floats, unpack, pack, rotate, div_by_rcp, approx_rcp

namespace ktune::dev::rope_cache {

// What every item needs, fixed for the launch.
template <typename T>
struct Args {
    T* q;
    const T* k;
    const T* v;
    T* k_cache;
    T* v_cache;
    const int* positions;
    const float* cos_cache;
    const float* sin_cache;
    int heads_q;
    int heads_k;
    int head_dim;
    int rotary_dim;
    int half;
    long long cache_len;
    long long q_token_stride;
    long long k_token_stride;
    long long v_token_stride;
};

// The element offset of kv head h's cache row of token t at position pos.
template <typename T>
__device__ __forceinline__ long long cache_row(const Args<T>& a, long long t, int h, int pos) {
    return ((t * a.heads_k + h) * a.cache_len + pos) * a.head_dim;
}

enum Kind : int { q_rotate = 0, k_rotate = 1, k_copy = 2, v_copy = 3 };

// Counts and reciprocals of the vector path's item split (see the file comment), fixed for the launch.
struct Split {
    unsigned rotations;    // (heads_q + heads_k) * chunks
    unsigned chunks;       // half / VEC: rotation items per head
    unsigned copies;       // (2 * head_dim - rotary_dim) / VEC: copy items per kv head
    unsigned tail_chunks;  // (head_dim - rotary_dim) / VEC: k's unrotated dims, the first copies of a kv head
    float rcp_chunks;
    float rcp_copies;
};

// One part of a token: items [begin, end), UNROLL per thread per pass, all loads of a pass before any store.
template <typename T, int BLOCK, int VEC, int UNROLL>
__device__ __forceinline__ void part_vector(const Args<T>& a, const Split& sp, long long t, unsigned begin,
                                            unsigned end) {
    constexpr int W = VEC * int(sizeof(T)) / 4;
    for (unsigned f0 = begin + threadIdx.x; f0 < end; f0 += BLOCK * UNROLL) {
        const T* src[UNROLL];
        int kind[UNROLL], head[UNROLL], col[UNROLL];
        bool ok[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const unsigned f = f0 + u * BLOCK;
            ok[u] = f < end;
            // One division per item, by a divisor picked with selects (no branch ahead of the loads).
            const bool rot = f < sp.rotations;
            unsigned rem;
            const unsigned h = rope::div_by_rcp(rot ? f : f - sp.rotations, rot ? sp.chunks : sp.copies,
                                                rot ? sp.rcp_chunks : sp.rcp_copies, rem);
            const bool in_q = rot && static_cast<int>(h) < a.heads_q;
            const bool tail = !rot && rem < sp.tail_chunks;
            kind[u] = rot ? (in_q ? q_rotate : k_rotate) : (tail ? k_copy : v_copy);
            head[u] = in_q || !rot ? static_cast<int>(h) : static_cast<int>(h) - a.heads_q;
            col[u] = rot ? static_cast<int>(rem) * VEC
                         : (tail ? a.rotary_dim + static_cast<int>(rem) * VEC
                                 : static_cast<int>(rem - sp.tail_chunks) * VEC);
            const T* base = kind[u] == q_rotate ? a.q : (kind[u] == v_copy ? a.v : a.k);
            const long long stride =
                kind[u] == q_rotate ? a.q_token_stride : (kind[u] == v_copy ? a.v_token_stride : a.k_token_stride);
            src[u] = base + t * stride + static_cast<long long>(head[u]) * a.head_dim + col[u];
        }
        // 1. q, k, v: their addresses need no position
        Words<W> xa[UNROLL], xb[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (!ok[u]) continue;
            xa[u] = load_words<W>(src[u]);
            if (kind[u] <= k_rotate) xb[u] = load_words<W>(src[u] + a.half);
        }
        // 2. the position (one per block: every item of a part is of token t), 3. cos/sin rows, which need it
        const int pos = __ldg(a.positions + t);
        float cs[UNROLL][VEC], sn[UNROLL][VEC];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (!ok[u] || kind[u] > k_rotate) continue;
            const long long row = static_cast<long long>(pos) * a.half + col[u];
            rope::load_floats<VEC>(a.cos_cache + row, cs[u]);
            rope::load_floats<VEC>(a.sin_cache + row, sn[u]);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (!ok[u]) continue;
            T* dst = kind[u] == q_rotate ? const_cast<T*>(src[u])
                                         : (kind[u] == v_copy ? a.v_cache : a.k_cache) +
                                               cache_row(a, t, head[u], pos) + col[u];
            if (kind[u] > k_rotate) {
                store_words<W>(dst, xa[u]);
            } else {
                float fa[VEC], fb[VEC];
                rope::unpack<T, W>(xa[u], fa);
                rope::unpack<T, W>(xb[u], fb);
#pragma unroll
                for (int j = 0; j < VEC; ++j) rope::rotate(fa[j], fb[j], cs[u][j], sn[u][j]);
                store_words<W>(dst, rope::pack<T, W>(fa));
                store_words<W>(dst + a.half, rope::pack<T, W>(fb));
            }
        }
    }
}

// The scalar path: items [begin, end) of the element numbering (one pair per rotation item, one element per copy).
template <typename T, int BLOCK>
__device__ __forceinline__ void part_scalar(const Args<T>& a, long long t, long long begin, long long end) {
    const long long rotations = static_cast<long long>(a.heads_q + a.heads_k) * a.half;
    const int tail = a.head_dim - a.rotary_dim;
    const long long copies = tail + a.head_dim;
    const int pos = a.positions[t];
    for (long long f = begin + threadIdx.x; f < end; f += BLOCK) {
        if (f < rotations) {
            const int h = static_cast<int>(f / a.half), i = static_cast<int>(f % a.half);
            const bool in_q = h < a.heads_q;
            const T* src = in_q ? a.q + t * a.q_token_stride + static_cast<long long>(h) * a.head_dim
                                : a.k + t * a.k_token_stride + static_cast<long long>(h - a.heads_q) * a.head_dim;
            T* dst = in_q ? const_cast<T*>(src) : a.k_cache + cache_row(a, t, h - a.heads_q, pos);
            float x = to_float(src[i]), y = to_float(src[i + a.half]);
            const long long row = static_cast<long long>(pos) * a.half + i;
            rope::rotate(x, y, a.cos_cache[row], a.sin_cache[row]);
            dst[i] = from_float<T>(x);
            dst[i + a.half] = from_float<T>(y);
        } else {
            const long long g = f - rotations;
            const int h = static_cast<int>(g / copies), e = static_cast<int>(g % copies);
            const long long off = cache_row(a, t, h, pos);
            if (e < tail)
                a.k_cache[off + a.rotary_dim + e] =
                    a.k[t * a.k_token_stride + static_cast<long long>(h) * a.head_dim + a.rotary_dim + e];
            else
                a.v_cache[off + e - tail] =
                    a.v[t * a.v_token_stride + static_cast<long long>(h) * a.head_dim + e - tail];
        }
    }
}

}  // namespace ktune::dev::rope_cache

template <typename T, int BLOCK, int VEC, int UNROLL, int SPLIT>
__global__ void __launch_bounds__(BLOCK)
    rope_cache_fwd(T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, T* __restrict__ k_cache,
                   T* __restrict__ v_cache, const int* __restrict__ positions, const float* __restrict__ cos_cache,
                   const float* __restrict__ sin_cache, int tokens, int heads_q, int heads_k, int head_dim,
                   int rotary_dim, int cache_len, long long q_token_stride, long long k_token_stride,
                   long long v_token_stride) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 2, "rope_cache_fwd: T is float, __half or __nv_bfloat16");
    static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0,
                  "rope_cache_fwd: BLOCK a multiple of 32 in [32, 1024]");
    static_assert(VEC >= 1 && (VEC & (VEC - 1)) == 0, "rope_cache_fwd: VEC is a power of two");
    static_assert(VEC * sizeof(T) <= 16, "rope_cache_fwd: VEC * sizeof(T) <= 16");
    static_assert(VEC * sizeof(T) >= 8, "rope_cache_fwd: VEC * sizeof(T) >= 8 (narrower accesses are not tuned)");
    static_assert(UNROLL >= 1 && UNROLL <= 8, "rope_cache_fwd: UNROLL in [1, 8]");
    // Programmatic launch (dependent_launch.cuh): the next kernel may start at once (decode attention asks L2 for its
    // first cache tiles while this one waits and rotates; it still waits for this one to complete); nothing read or
    // written before the kernel before is done.
    ktune::dev::launch_dependents();
    ktune::dev::wait_prior_grids();
    static_assert(VEC * UNROLL <= 16, "rope_cache_fwd: VEC * UNROLL <= 16 (registers)");
    static_assert(SPLIT >= 1 && SPLIT <= 64, "rope_cache_fwd: SPLIT in [1, 64]");

    using namespace ktune::dev;
    const int half = rotary_dim / 2;
    const rope_cache::Args<T> a{q,         k,          v,          k_cache, v_cache,   positions,
                                cos_cache, sin_cache,  heads_q,    heads_k, head_dim,  rotary_dim,
                                half,      cache_len,  q_token_stride, k_token_stride, v_token_stride};
    const bool vector_ok = half % VEC == 0 && head_dim % VEC == 0 && q_token_stride % VEC == 0 &&
                           k_token_stride % VEC == 0 && v_token_stride % VEC == 0 &&
                           all_aligned(VEC * unsigned(sizeof(T)), q, k, v, k_cache, v_cache) &&
                           all_aligned(16, cos_cache, sin_cache);
    const long long groups = static_cast<long long>(tokens) * SPLIT;
    // Uniform over the grid: one path per launch.
    if (vector_ok) {
        rope_cache::Split sp;
        sp.chunks = static_cast<unsigned>(half / VEC);
        sp.rotations = static_cast<unsigned>(heads_q + heads_k) * sp.chunks;
        sp.tail_chunks = static_cast<unsigned>((head_dim - rotary_dim) / VEC);
        sp.copies = sp.tail_chunks + static_cast<unsigned>(head_dim / VEC);
        sp.rcp_chunks = rope::approx_rcp(sp.chunks);
        sp.rcp_copies = rope::approx_rcp(sp.copies);
        const unsigned items = sp.rotations + static_cast<unsigned>(heads_k) * sp.copies;
        const unsigned per_part = (items + SPLIT - 1) / SPLIT;
        for (long long g = blockIdx.x; g < groups; g += gridDim.x) {
            const long long t = g / SPLIT;
            const unsigned begin = static_cast<unsigned>(g % SPLIT) * per_part;
            const unsigned end = begin + per_part < items ? begin + per_part : items;
            rope_cache::part_vector<T, BLOCK, VEC, UNROLL>(a, sp, t, begin, end);
        }
        return;
    }
    const long long items = static_cast<long long>(heads_q + heads_k) * half +
                            static_cast<long long>(heads_k) * (2 * head_dim - rotary_dim);
    const long long per_part = (items + SPLIT - 1) / SPLIT;
    for (long long g = blockIdx.x; g < groups; g += gridDim.x) {
        const long long t = g / SPLIT;
        const long long begin = (g % SPLIT) * per_part;
        const long long end = begin + per_part < items ? begin + per_part : items;
        rope_cache::part_scalar<T, BLOCK>(a, t, begin, end);
    }
}
