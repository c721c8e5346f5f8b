// The CPU references of gemm_act/none, gelu, silu and ffn_gated/swiglu, geglu (kernels/gemm/*.op.yaml), in double:
//   gemm_act:  y[m, n] = act(sum_k x[m, k] w[n, k] + b[n]),  w [N, K] row-major
//   ffn_gated: y[m, i] = act(sum_k x[m, k] w[i, k]) * sum_k x[m, k] w[I + i, k],  w [2I, K] = [Wg; Wu]
// act: none, gelu in its tanh form, silu, from their textbook formulas (as the device references,
// kernels/gemm/gemm_reference.cuh and ffn_gated_reference.cuh).
#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/op.hpp"

namespace ktune {
namespace {

enum class Act { none, gelu, silu };

double activation(Act act, double z) {
    switch (act) {
        case Act::gelu:
            return 0.5 * z * (1.0 + std::tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)));
        case Act::silu:
            return z / (1.0 + std::exp(-z));
        case Act::none:
            break;
    }
    return z;
}

double dot(const std::vector<double>& x, const std::vector<double>& w, std::int64_t m, std::int64_t n, std::int64_t k) {
    double s = 0;
    for (std::int64_t i = 0; i < k; ++i)
        s += x[static_cast<std::size_t>(m * k + i)] * w[static_cast<std::size_t>(n * k + i)];
    return s;
}

void gemm_act(const Problem& p, HostBuffers& buffers, Act act, const char* key) {
    const std::int64_t m = axis(p, "M", key), n = axis(p, "N", key), k = axis(p, "K", key);
    const std::vector<double>& x = host_input(buffers, "x", m * k, key);
    const std::vector<double>& w = host_input(buffers, "w", n * k, key);
    const std::vector<double>& b = host_input(buffers, "b", n, key);
    std::vector<double>& y = host_output(buffers, "y", m * n);
    for (std::int64_t r = 0; r < m; ++r)
        for (std::int64_t c = 0; c < n; ++c)
            y[static_cast<std::size_t>(r * n + c)] =
                activation(act, dot(x, w, r, c, k) + b[static_cast<std::size_t>(c)]);
}

void ffn_gated(const Problem& p, HostBuffers& buffers, Act act, const char* key) {
    const std::int64_t m = axis(p, "M", key), inter = axis(p, "I", key), k = axis(p, "K", key);
    const std::vector<double>& x = host_input(buffers, "x", m * k, key);
    const std::vector<double>& w = host_input(buffers, "w", 2 * inter * k, key);
    std::vector<double>& y = host_output(buffers, "y", m * inter);
    for (std::int64_t r = 0; r < m; ++r)
        for (std::int64_t c = 0; c < inter; ++c)
            y[static_cast<std::size_t>(r * inter + c)] =
                activation(act, dot(x, w, r, c, k)) * dot(x, w, r, inter + c, k);
}

}  // namespace

void gemm_act_none_cpu_reference(const Problem& p, HostBuffers& buffers) {
    gemm_act(p, buffers, Act::none, "gemm_act/none");
}
void gemm_act_gelu_cpu_reference(const Problem& p, HostBuffers& buffers) {
    gemm_act(p, buffers, Act::gelu, "gemm_act/gelu");
}
void gemm_act_silu_cpu_reference(const Problem& p, HostBuffers& buffers) {
    gemm_act(p, buffers, Act::silu, "gemm_act/silu");
}
void ffn_gated_swiglu_cpu_reference(const Problem& p, HostBuffers& buffers) {
    ffn_gated(p, buffers, Act::silu, "ffn_gated/swiglu");
}
void ffn_gated_geglu_cpu_reference(const Problem& p, HostBuffers& buffers) {
    ffn_gated(p, buffers, Act::gelu, "ffn_gated/geglu");
}

}  // namespace ktune
