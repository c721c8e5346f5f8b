// The CPU references of add_rmsnorm/fwd, fwd_inplace and fwd_gemma (kernels/add_rmsnorm/*.op.yaml): s = x + residual,
// the residual written (residual_out, or residual in place) is s, y = s * rsqrt(mean(s^2) + eps) * g with g = w, or
// 1 + w for Gemma.
#include <cmath>
#include <cstdint>
#include <string_view>

#include "kernels/op.hpp"

namespace ktune {
namespace {

constexpr double add_rmsnorm_eps = 1e-6;  // the op's eps argument

enum class Kind { fwd, fwd_inplace, fwd_gemma };

// In double, not rounded to the storage type: the residual written is the exact sum, y normalises it. Padding
// columns of the outputs are left as they are (outputs created with NaN when absent or mis-sized; the in-place
// residual's padding keeps its input values).
void add_rmsnorm(const Problem& p, HostBuffers& buffers, Kind kind) {
    const std::string_view key = kind == Kind::fwd_inplace ? "add_rmsnorm/fwd_inplace"
                                 : kind == Kind::fwd_gemma ? "add_rmsnorm/fwd_gemma"
                                                           : "add_rmsnorm/fwd";
    const std::int64_t m = axis(p, "M", key), h = axis(p, "H", key), s = axis(p, "S", key);
    const std::int64_t n = m * s;
    const std::vector<double> x = host_input(buffers, "x", n, key);
    const std::vector<double> w = host_input(buffers, "w", h, key);
    std::vector<double> residual = host_input(buffers, "residual", n, key);  // a copy: in place, it is overwritten
    std::vector<double>& y = host_output(buffers, "y", n);
    std::vector<double>& res_out =
        kind == Kind::fwd_inplace ? buffers["residual"] : host_output(buffers, "residual_out", n);
    const double eps = static_cast<double>(static_cast<float>(add_rmsnorm_eps));
    for (std::int64_t r = 0; r < m; ++r) {
        const std::size_t row = static_cast<std::size_t>(r * s);
        double sum_sq = 0.0;
        for (std::int64_t c = 0; c < h; ++c) {
            const double v = x[row + c] + residual[row + c];
            sum_sq += v * v;
        }
        const double rstd = 1.0 / std::sqrt(sum_sq / static_cast<double>(h) + eps);
        for (std::int64_t c = 0; c < h; ++c) {
            const double v = x[row + c] + residual[row + c];
            const double wc = w[static_cast<std::size_t>(c)];
            res_out[row + c] = v;
            y[row + c] = v * rstd * (kind == Kind::fwd_gemma ? 1.0 + wc : wc);
        }
    }
}

}  // namespace

void add_rmsnorm_fwd_cpu_reference(const Problem& p, HostBuffers& b) { add_rmsnorm(p, b, Kind::fwd); }
void add_rmsnorm_fwd_inplace_cpu_reference(const Problem& p, HostBuffers& b) { add_rmsnorm(p, b, Kind::fwd_inplace); }
void add_rmsnorm_fwd_gemma_cpu_reference(const Problem& p, HostBuffers& b) { add_rmsnorm(p, b, Kind::fwd_gemma); }

}  // namespace ktune
