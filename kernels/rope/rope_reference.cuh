#pragma once
// RoPE on q and k, the reference the tuned kernel is validated against (same arguments as rope_fwd in
// kernels/rope/rope_fwd.cuh, which states the operation). Plain and obviously correct: one thread per (head, pair),
// element accesses, the rotation in double, each output rounded once to T. Elements rotary_dim.. of a head and the
// padding between token rows are not touched.
// Launch (search_spaces/rope_*.yaml reference_launch): any 1-D block and grid; blocks loop over tokens, threads over
// the token's (heads_q + heads_k) * rotary_dim / 2 pairs. grid = M gives one token per block.
#include "kernels/common/ktune_device.cuh"
#include "kernels/rope/rope_style.cuh"

template <typename T, ktune::dev::rope::Style STYLE>
__global__ void rope_fwd_reference(T* q, T* k, const int* positions, const float* cos_cache, const float* sin_cache,
                                   int tokens, int heads_q, int heads_k, int head_dim, int rotary_dim,
                                   long long q_token_stride, long long k_token_stride) {
    using ktune::dev::from_double;
    using ktune::dev::to_float;
    const int half = rotary_dim / 2;
    const long long pairs = static_cast<long long>(heads_q + heads_k) * half;
    for (long long t = blockIdx.x; t < tokens; t += gridDim.x) {
        const long long row = static_cast<long long>(positions[t]) * half;
        for (long long j = threadIdx.x; j < pairs; j += blockDim.x) {
            const int h = static_cast<int>(j / half);
            const int i = static_cast<int>(j % half);
            T* head = h < heads_q ? q + t * q_token_stride + static_cast<long long>(h) * head_dim
                                  : k + t * k_token_stride + static_cast<long long>(h - heads_q) * head_dim;
            T* pa = STYLE == ktune::dev::rope::Style::neox ? head + i : head + 2 * i;
            T* pb = STYLE == ktune::dev::rope::Style::neox ? head + i + half : head + 2 * i + 1;
            const double a = to_float(*pa), b = to_float(*pb);
            const double c = cos_cache[row + i], s = sin_cache[row + i];
            *pa = from_double<T>(a * c - b * s);
            *pb = from_double<T>(b * c + a * s);
        }
    }
}
