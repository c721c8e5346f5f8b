#pragma once
// RoPE + KV-cache write at decode, the reference the tuned kernel is validated against (same arguments as
// rope_cache_fwd in kernels/rope/rope_cache_fwd.cuh, which states the operation; op: kernels/rope/rope_neox_cache.op.yaml).
// Plain and obviously correct: one thread per item, element accesses, the rotation in double, each output rounded
// once to T. A token's items: its (q head, pair) and (k head, pair) rotations (a pair is (i, i + rotary_dim / 2), read
// and written by one thread: q is rotated in place), then k's dims rotary_dim.. of every k head, then v's dims of every
// v head, one element each, copied into the caches at row positions[t].
// Launch (search_spaces/rope_neox_cache.yaml reference_launch): any 1-D block and grid; blocks loop over tokens,
// threads over the token's items. grid = M gives one token per block.
#include "kernels/common/ktune_device.cuh"

template <typename T>
__global__ void rope_cache_fwd_reference(T* q, const T* k, const T* v, T* k_cache, T* v_cache, const int* positions,
                                         const float* cos_cache, const float* sin_cache, int tokens, int heads_q,
                                         int heads_k, int head_dim, int rotary_dim, int cache_len,
                                         long long q_token_stride, long long k_token_stride,
                                         long long v_token_stride) {
    using ktune::dev::from_double;
    using ktune::dev::to_float;
    const long long half = rotary_dim / 2;
    const long long pairs = static_cast<long long>(heads_q + heads_k) * half;
    const long long k_tail = static_cast<long long>(heads_k) * (head_dim - rotary_dim);
    const long long v_elems = static_cast<long long>(heads_k) * head_dim;
    for (long long t = blockIdx.x; t < tokens; t += gridDim.x) {
        const long long pos = positions[t];
        // the start of kv head h's cache row for this token
        const auto cache_row = [&](long long h) { return ((t * heads_k + h) * cache_len + pos) * head_dim; };
        for (long long j = threadIdx.x; j < pairs + k_tail + v_elems; j += blockDim.x) {
            if (j < pairs) {
                const long long h = j / half, i = j % half;
                const T* src = h < heads_q ? q + t * q_token_stride + h * head_dim
                                           : k + t * k_token_stride + (h - heads_q) * head_dim;
                T* dst = h < heads_q ? q + t * q_token_stride + h * head_dim : k_cache + cache_row(h - heads_q);
                const double a = to_float(src[i]), b = to_float(src[i + half]);
                const double c = cos_cache[pos * half + i], s = sin_cache[pos * half + i];
                dst[i] = from_double<T>(a * c - b * s);
                dst[i + half] = from_double<T>(b * c + a * s);
            } else if (j < pairs + k_tail) {
                const long long e = j - pairs, tail = head_dim - rotary_dim;
                const long long h = e / tail, i = rotary_dim + e % tail;
                k_cache[cache_row(h) + i] = k[t * k_token_stride + h * head_dim + i];
            } else {
                const long long e = j - pairs - k_tail;
                const long long h = e / head_dim, i = e % head_dim;
                v_cache[cache_row(h) + i] = v[t * v_token_stride + h * head_dim + i];
            }
        }
    }
}
