// The CPU references of layernorm/fwd and layernorm/fwd_nobias (kernels/layernorm/*.op.yaml):
// y[r, c] = (x[r, c] - mean(x[r, :])) * rsqrt(var(x[r, :]) + eps) * w[c] (+ b[c]), var the biased (1/H) variance.
#include <cmath>
#include <cstdint>
#include <string_view>

#include "kernels/op.hpp"

namespace ktune {
namespace {

constexpr double layernorm_eps = 1e-5;  // the op's eps argument: torch.nn.LayerNorm's default

// y in double (two-pass variance, eps rounded to float as the kernels receive it), not rounded to the storage type.
// y's padding columns are left as they are (y created with NaN when absent or mis-sized).
void layernorm(const Problem& p, HostBuffers& buffers, bool bias) {
    const std::string_view key = bias ? "layernorm/fwd" : "layernorm/fwd_nobias";
    const std::int64_t m = axis(p, "M", key), hidden = axis(p, "H", key), s = axis(p, "S", key);
    const std::vector<double>& x = host_input(buffers, "x", m * s, key);
    const std::vector<double>& w = host_input(buffers, "w", hidden, key);
    const std::vector<double>* b = bias ? &host_input(buffers, "b", hidden, key) : nullptr;
    std::vector<double>& y = host_output(buffers, "y", m * s);
    const double eps = static_cast<double>(static_cast<float>(layernorm_eps));
    const double h = static_cast<double>(hidden);
    for (std::int64_t r = 0; r < m; ++r) {
        const std::size_t row = static_cast<std::size_t>(r * s);
        double sum = 0.0;
        for (std::int64_t c = 0; c < hidden; ++c) sum += x[row + c];
        const double mean = sum / h;
        double dev = 0.0;
        for (std::int64_t c = 0; c < hidden; ++c) dev += (x[row + c] - mean) * (x[row + c] - mean);
        const double rstd = 1.0 / std::sqrt(dev / h + eps);
        for (std::int64_t c = 0; c < hidden; ++c) {
            const std::size_t col = static_cast<std::size_t>(c);
            y[row + c] = (x[row + c] - mean) * rstd * w[col] + (b ? (*b)[col] : 0.0);
        }
    }
}

}  // namespace

void layernorm_fwd_cpu_reference(const Problem& p, HostBuffers& buffers) { layernorm(p, buffers, true); }
void layernorm_fwd_nobias_cpu_reference(const Problem& p, HostBuffers& buffers) { layernorm(p, buffers, false); }

}  // namespace ktune
