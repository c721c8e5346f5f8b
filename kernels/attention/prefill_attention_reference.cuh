#pragma once
// Prefill attention, the reference the tuned kernels are validated against (same arguments as they take):
//
//   o[b, i, hq, :] = softmax_j(scale * q[b, i, hq, :] . k[b, j, hk, :]) @ v[b, j, hk, :]
//
// over j < seq_lens[b] (CAUSAL: j <= i too), hk = hq / (HQ / HK), layouts [B, L, H, D]; rows i >= seq_lens[b] of o are
// not written. Plain and obviously correct, in double: one warp per (query row, q head, sequence). Pass 1 finds the
// largest score (each lane its own keys); pass 2 walks the keys in order, the warp computing each score together and
// each lane accumulating its own output elements. Lengths are clamped to [0, L].
// Launch (search_spaces/prefill_attention*.yaml reference_launch): grid (L, HQ, B), block 32 threads; head_dim <= 256.
#include "kernels/common/ktune_device.cuh"

template <typename T, bool CAUSAL>
__global__ void __launch_bounds__(32)
    prefill_attention_reference(T* out, const T* q, const T* k, const T* v, const int* seq_lens, int batch,
                                int q_heads, int kv_heads, int head_dim, int max_len, float scale) {
    using ktune::dev::from_double;
    using ktune::dev::to_float;
    constexpr int PER_LANE = 8;  // head_dim <= 256
    if (blockDim.x != 32 || head_dim > 32 * PER_LANE || kv_heads < 1 || q_heads % kv_heads != 0) return;
    const int i = blockIdx.x, hq = blockIdx.y, b = blockIdx.z, lane = threadIdx.x;
    if (i >= max_len || hq >= q_heads || b >= batch) return;
    int len = seq_lens[b];
    len = len < 0 ? 0 : (len > max_len ? max_len : len);
    if (i >= len) return;
    const int keys = CAUSAL ? i + 1 : len;
    const int hk = hq / (q_heads / kv_heads);
    const T* qr = q + ((static_cast<long long>(b) * max_len + i) * q_heads + hq) * head_dim;
    auto key_row = [&](const T* base, int j) {
        return base + ((static_cast<long long>(b) * max_len + j) * kv_heads + hk) * head_dim;
    };
    auto score = [&](int j) {  // this lane's part of q . k_j
        const T* kr = key_row(k, j);
        double s = 0.0;
        for (int d = lane; d < head_dim; d += 32)
            s += static_cast<double>(to_float(qr[d])) * static_cast<double>(to_float(kr[d]));
        return s;
    };

    // Pass 1: the largest score (each lane its own keys, whole dot products).
    double mx = -__longlong_as_double(0x7FF0000000000000ll);  // -inf (no <cmath> under NVRTC)
    for (int j = lane; j < keys; j += 32) {
        const T* kr = key_row(k, j);
        double s = 0.0;
        for (int d = 0; d < head_dim; ++d)
            s += static_cast<double>(to_float(qr[d])) * static_cast<double>(to_float(kr[d]));
        s *= static_cast<double>(scale);
        mx = s > mx ? s : mx;
    }
    for (int off = 16; off > 0; off >>= 1) {
        const double other = __shfl_xor_sync(0xffffffffu, mx, off);
        mx = other > mx ? other : mx;
    }

    // Pass 2: keys in order; lane owns output elements lane, lane + 32, ...
    double acc[PER_LANE] = {};
    double lsum = 0.0;
    for (int j = 0; j < keys; ++j) {
        double s = score(j);
        for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
        const double p = exp(s * static_cast<double>(scale) - mx);
        lsum += p;
        const T* vr = key_row(v, j);
        for (int e = 0; e < PER_LANE; ++e)
            if (lane + 32 * e < head_dim) acc[e] += p * static_cast<double>(to_float(vr[lane + 32 * e]));
    }
    T* orow = out + ((static_cast<long long>(b) * max_len + i) * q_heads + hq) * head_dim;
    for (int e = 0; e < PER_LANE; ++e)
        if (lane + 32 * e < head_dim) orow[lane + 32 * e] = from_double<T>(acc[e] / lsum);
}
