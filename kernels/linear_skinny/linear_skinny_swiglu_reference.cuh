#pragma once
// The reference linear_skinny/fwd_swiglu is validated against (same arguments as linear_skinny_swiglu_fwd):
// y[m, n] = sum_k a[m, k] * W[n, k] with a[m, k] = T(silu(g) * u), g = gate_up[m, k], u = gate_up[m, K + k] (gate_up
// [M, 2K], W [N, K] row-major of T). silu in fp32 through expf (not the tuned kernel's approximations), a rounded to T
// as the unfused swiglu + linear do, each output a plain loop over k in double, rounded once to T. One thread per
// output (n = blockIdx.x * 256 + threadIdx.x, m = blockIdx.y): no tiles, no tensor cores. scratch and max_split_k are
// unused. Launch (search_spaces/linear_skinny_swiglu.yaml reference_launch): grid (ceil(N / 256), M), block 256.
#include "kernels/common/ktune_device.cuh"

template <typename T>
__global__ void __launch_bounds__(256) linear_skinny_swiglu_fwd_reference(T* y, const T* gate_up, const T* w,
                                                                          float* scratch, int M, int N, int K,
                                                                          int max_split_k) {
    (void)scratch;
    (void)max_split_k;
    const long long n = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    const long long m = blockIdx.y;
    if (n >= N || m >= M) return;
    const T* row = gate_up + m * 2 * static_cast<long long>(K);
    double acc = 0.0;
    for (long long k = 0; k < K; ++k) {
        const float g = ktune::dev::to_float(row[k]), u = ktune::dev::to_float(row[K + k]);
        const float a = ktune::dev::to_float(ktune::dev::from_float<T>(g / (1.0f + expf(-g)) * u));
        acc += static_cast<double>(a) * static_cast<double>(ktune::dev::to_float(w[n * K + k]));
    }
    y[m * N + n] = ktune::dev::from_double<T>(acc);
}
