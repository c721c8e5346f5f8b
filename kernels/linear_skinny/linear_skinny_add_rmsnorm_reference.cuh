#pragma once
// The reference linear_skinny/fwd_add_rmsnorm is validated against (same arguments as linear_skinny_add_rmsnorm_fwd):
// s[m, k] = fp32(a[m, k]) + fp32(r[m, k]), rstd[m] = rsqrt(mean_k(s^2) + eps) (the sum of squares in double),
// x[m, k] = T(s * rstd * nw[k]) in fp32 as ktune::add_rms_norm rounds it, y[m, n] = sum_k x[m, k] * W[n, k] in double,
// rounded once to T; r_out[m, k] = T(s), written by the threads of n < K (each writes the k = n of its row). One
// thread per output (n = blockIdx.x * 256 + threadIdx.x, m = blockIdx.y), each recomputing its row's rstd: no tiles,
// no tensor cores, no sharing. scratch and max_split_k are unused. Launch (search_spaces/linear_skinny_add_rmsnorm.yaml
// reference_launch): grid (ceil(max(N, K) / 256), M), block 256.
#include "kernels/common/ktune_device.cuh"

template <typename T>
__global__ void __launch_bounds__(256)
    linear_skinny_add_rmsnorm_fwd_reference(T* y, T* r_out, const T* a, const T* r, const T* nw, const T* w,
                                            float* scratch, int M, int N, int K, int max_split_k, float eps) {
    (void)scratch;
    (void)max_split_k;
    using ktune::dev::to_float;
    const long long n = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    const long long m = blockIdx.y;
    if (m >= M) return;
    const T* a_row = a + m * K;
    const T* r_row = r + m * K;
    if (n < K) r_out[m * K + n] = ktune::dev::from_float<T>(to_float(a_row[n]) + to_float(r_row[n]));
    if (n >= N) return;
    double sum_sq = 0.0;
    for (long long k = 0; k < K; ++k) {
        const float s = to_float(a_row[k]) + to_float(r_row[k]);
        sum_sq += static_cast<double>(s) * static_cast<double>(s);
    }
    const float rstd = static_cast<float>(1.0 / sqrt(sum_sq / K + static_cast<double>(eps)));
    double acc = 0.0;
    for (long long k = 0; k < K; ++k) {
        const float s = to_float(a_row[k]) + to_float(r_row[k]);
        const float x = to_float(ktune::dev::from_float<T>(s * rstd * to_float(nw[k])));
        acc += static_cast<double>(x) * static_cast<double>(to_float(w[n * K + k]));
    }
    y[m * N + n] = ktune::dev::from_double<T>(acc);
}
