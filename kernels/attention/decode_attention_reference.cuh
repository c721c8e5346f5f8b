#pragma once
// Decode attention, the reference the tuned kernels are validated against (same arguments as they take):
//
//   out[b, hq, :] = softmax_t(scale * q[b, hq, :] . k[b, hk, t, :]) @ v[b, hk, :, :]     t < seq_lens[b], hk = hq / G
//
// Plain and obviously correct, in double: one block per (q head, sequence). Pass 1 finds the largest score; pass 2
// walks the tokens in chunks of CHUNK, writes exp(s - max) of each to shared memory, and every thread accumulates one
// output element over the chunk in token order. Lengths are clamped to [0, L]; an empty sequence gives 0.
// scratch and max_splits are unused. Layouts: kernels/attention/decode_attention_layout.cuh.
// Launch (search_spaces/decode_attention*.yaml reference_launch): grid (HQ, B), block 256 threads; head_dim <= 256.
#include "kernels/common/ktune_device.cuh"

template <typename T>
__global__ void __launch_bounds__(256)
    decode_attention_fwd_reference(T* out, const T* q, const T* k_cache, const T* v_cache, const int* seq_lens,
                                   float* scratch, int batch, int q_heads, int kv_heads, int head_dim, int max_len,
                                   float scale, int max_splits) {
    constexpr int THREADS = 256;
    constexpr int CHUNK = 1024;
    __shared__ double qs[THREADS];
    __shared__ double ps[CHUNK];
    __shared__ double red[THREADS];
    (void)scratch;
    (void)max_splits;
    using ktune::dev::from_double;
    using ktune::dev::to_float;
    if (blockDim.x != THREADS || head_dim > THREADS) return;

    const int hq = blockIdx.x, b = blockIdx.y, tid = threadIdx.x;
    if (hq >= q_heads || b >= batch) return;
    const int hk = hq / (q_heads / kv_heads);
    int len = seq_lens[b];
    len = len < 0 ? 0 : (len > max_len ? max_len : len);
    const T* qr = q + (static_cast<long long>(b) * q_heads + hq) * head_dim;
    const long long head_base = (static_cast<long long>(b) * kv_heads + hk) * max_len * head_dim;
    const T* kb = k_cache + head_base;
    const T* vb = v_cache + head_base;
    if (tid < head_dim) qs[tid] = to_float(qr[tid]);
    __syncthreads();

    // Pass 1: the largest score.
    double mx = -__longlong_as_double(0x7FF0000000000000ll);  // -inf (no <cmath> under NVRTC)
    for (int t = tid; t < len; t += THREADS) {
        double s = 0.0;
        for (int d = 0; d < head_dim; ++d)
            s += qs[d] * static_cast<double>(to_float(kb[static_cast<long long>(t) * head_dim + d]));
        s *= static_cast<double>(scale);
        mx = s > mx ? s : mx;
    }
    red[tid] = mx;
    __syncthreads();
    for (int half = THREADS / 2; half > 0; half >>= 1) {
        if (tid < half && red[tid + half] > red[tid]) red[tid] = red[tid + half];
        __syncthreads();
    }
    mx = red[0];
    __syncthreads();

    // Pass 2: exp(s - max) per chunk of tokens, then each thread's output element over the chunk, in token order.
    double lsum = 0.0, o = 0.0;
    for (int c0 = 0; c0 < len; c0 += CHUNK) {
        const int n = len - c0 < CHUNK ? len - c0 : CHUNK;
        for (int i = tid; i < n; i += THREADS) {
            const long long t = c0 + i;
            double s = 0.0;
            for (int d = 0; d < head_dim; ++d) s += qs[d] * static_cast<double>(to_float(kb[t * head_dim + d]));
            ps[i] = exp(s * static_cast<double>(scale) - mx);
        }
        __syncthreads();
        if (tid < head_dim)
            for (int i = 0; i < n; ++i) {
                lsum += ps[i];
                o += ps[i] * static_cast<double>(to_float(vb[static_cast<long long>(c0 + i) * head_dim + tid]));
            }
        __syncthreads();
    }
    if (tid < head_dim)
        out[(static_cast<long long>(b) * q_heads + hq) * head_dim + tid] = from_double<T>(len > 0 ? o / lsum : 0.0);
}
