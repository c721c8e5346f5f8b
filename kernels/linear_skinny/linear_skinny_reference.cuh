#pragma once
// The reference linear_skinny/fwd is validated against (same arguments as linear_skinny_fwd): y[m, n] = sum_k x[m, k] *
// W[n, k] with W [N, K] row-major of T, each output a plain loop over k in double, rounded once to T. One thread per
// output (n = blockIdx.x * 256 + threadIdx.x, m = blockIdx.y): no tiles, no tensor cores, nothing shared with the
// tuned kernel. scratch and max_split_k are unused. Launch (search_spaces/linear_skinny*.yaml reference_launch): grid
// (ceil(N / 256), M), block 256.
#include "kernels/common/ktune_device.cuh"

template <typename T>
__global__ void __launch_bounds__(256) linear_skinny_fwd_reference(T* y, const T* x, const T* w, float* scratch, int M,
                                                                   int N, int K, int max_split_k) {
    (void)scratch;
    (void)max_split_k;
    const long long n = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    const long long m = blockIdx.y;
    if (n >= N || m >= M) return;
    double acc = 0.0;
    for (long long k = 0; k < K; ++k)
        acc += static_cast<double>(ktune::dev::to_float(x[m * K + k])) *
               static_cast<double>(ktune::dev::to_float(w[n * K + k]));
    y[m * N + n] = ktune::dev::from_double<T>(acc);
}
