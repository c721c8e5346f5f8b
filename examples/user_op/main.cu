// A user's program that calls the tuned bias_gelu (this folder's op, tuned with `ktune tune bias_gelu.yaml`) through
// the header `ktune export-header` wrote for it, compiled ahead of time with nvcc. Plain CUDA and the header: no ktune
// library, no ktune kernel folder (the op's kernels sit beside this file).
//
// For each shape it fills x and b on the host, calls ktune_tuned::bias_gelu_fwd(), and checks y against a CPU
// computation in double with the search space's tolerances; it prints which kernel (flat or rows), configuration and
// fallback level the dispatcher chose.
//   bias_gelu_example                 the shapes below, in fp16 and bf16 (those the header has configurations for)
// Exit status 0 when every call returned Status::ok and every element matched.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "ktune_tuned_bias_gelu_fwd.hpp"  // ktune export-header --op bias_gelu.yaml --out <folder>

namespace kt = ktune_tuned;

namespace {

// Host conversions to and from the element type, by its bits (round to nearest even).
float half_to_float(std::uint16_t h) { return __half2float(__ushort_as_half(h)); }
std::uint16_t float_to_half(float f) { return __half_as_ushort(__float2half_rn(f)); }
float bf16_to_float(std::uint16_t h) {
    const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}
std::uint16_t float_to_bf16(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

double gelu_tanh(double v) { return 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); }

// x in [-4, 4), b in [-1, 1): the tuner's generator ranges (bias_gelu.yaml).
double uniform(std::uint64_t& state, double lo, double hi) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * static_cast<double>(state >> 11) / 9007199254740992.0;
}

bool run(const kt::DeviceProps& props, kt::Dtype dtype, long long m, long long n) {
    const bool fp16 = dtype == kt::Dtype::fp16;
    const auto to_t = [&](double v) { return fp16 ? float_to_half(static_cast<float>(v)) : float_to_bf16(static_cast<float>(v)); };
    const auto from_t = [&](std::uint16_t v) { return static_cast<double>(fp16 ? half_to_float(v) : bf16_to_float(v)); };
    std::vector<std::uint16_t> x(static_cast<std::size_t>(m * n)), b(static_cast<std::size_t>(n)), y(x.size());
    std::uint64_t state = 1;
    for (auto& v : x) v = to_t(uniform(state, -4, 4));
    for (auto& v : b) v = to_t(uniform(state, -1, 1));

    void *dx = nullptr, *db = nullptr, *dy = nullptr;
    if (cudaMalloc(&dx, x.size() * 2) != cudaSuccess || cudaMalloc(&db, b.size() * 2) != cudaSuccess ||
        cudaMalloc(&dy, y.size() * 2) != cudaSuccess) {
        std::printf("cudaMalloc failed\n");
        return false;
    }
    cudaMemcpy(dx, x.data(), x.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice);
    kt::Choice choice;
    const kt::Status s = kt::bias_gelu_fwd(props, dtype, dy, dx, db, m, n, nullptr, &choice);
    const cudaError_t e = cudaMemcpy(y.data(), dy, y.size() * 2, cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(db);
    cudaFree(dy);
    if (s != kt::Status::ok || e != cudaSuccess) {
        std::printf("%s M=%lld N=%lld: %s (%s)\n", kt::dtype_name(dtype), m, n, kt::status_message(s),
                    cudaGetErrorString(e));
        return false;
    }

    // The search space's tolerances: the reference is tanhf in fp32, FAST kernels use tanh.approx.
    const double rtol = kt::bias_gelu_fwd_table::tolerances[static_cast<int>(dtype)][0];
    const double atol = kt::bias_gelu_fwd_table::tolerances[static_cast<int>(dtype)][1];
    long long bad = 0;
    double worst = 0;
    for (long long r = 0; r < m; ++r)
        for (long long c = 0; c < n; ++c) {
            const std::size_t i = static_cast<std::size_t>(r * n + c);
            const double want = gelu_tanh(from_t(x[i]) + from_t(b[static_cast<std::size_t>(c)]));
            const double err = std::fabs(from_t(y[i]) - want);
            if (!(err <= atol + rtol * std::fabs(want))) ++bad;
            worst = std::fmax(worst, err);
        }
    std::printf("%s M=%lld N=%lld: %s, %s, %s, %s level; max |y - cpu| %.3g, %lld mismatches\n",
                kt::dtype_name(dtype), m, n, bad == 0 ? "ok" : "MISMATCH", choice.kernel, choice.config_key,
                kt::level_name(choice.level), worst, bad);
    return bad == 0;
}

}  // namespace

int main() {
    kt::DeviceProps props;
    int cuda_error = 0;
    if (kt::query_device_props(0, &props, &cuda_error) != kt::Status::ok) {
        std::printf("no CUDA device (error %d)\n", cuda_error);
        return 2;
    }
    const long long shapes[][2] = {{1, 4096}, {16, 14336}, {256, 4096}, {3, 1000}};  // the last one untuned, odd
    bool ok = true;
    for (kt::Dtype dtype : {kt::Dtype::fp16, kt::Dtype::bf16}) {
        if (!kt::bias_gelu_fwd_table::supports(dtype)) continue;
        for (const auto& s : shapes) ok = run(props, dtype, s[0], s[1]) && ok;
    }
    std::printf("%s\n", ok ? "all ok" : "FAILED");
    return ok ? 0 : 1;
}
