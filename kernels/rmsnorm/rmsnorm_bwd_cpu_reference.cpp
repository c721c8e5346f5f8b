// The CPU reference of rmsnorm/bwd (kernels/rmsnorm/rmsnorm_bwd.op.yaml):
// with rstd[r] = 1 / sqrt(mean(x[r, :]^2) + eps),
//   dx[r, c] = rstd[r] * dy[r, c] * w[c] - rstd[r]^3 * mean_c(dy[r, :] * w * x[r, :]) * x[r, c]
//   dw[c]    = sum_r dy[r, c] * x[r, c] * rstd[r]
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/op.hpp"

namespace ktune {

// dx and dw in double from the given x, dy and w (eps rounded to float as the kernels receive it), not rounded to
// the storage type. dx's padding columns are left as they are (dx created with NaN when absent or mis-sized).
void rmsnorm_bwd_cpu_reference(const Problem& p, HostBuffers& buffers) {
    constexpr std::string_view key = "rmsnorm/bwd";
    constexpr double rmsnorm_bwd_eps = 1e-6;  // the op's eps argument
    const std::int64_t m = axis(p, "M", key), hidden = axis(p, "H", key), s = axis(p, "S", key);
    const std::vector<double>& x = host_input(buffers, "x", m * s, key);
    const std::vector<double>& dy = host_input(buffers, "dy", m * s, key);
    const std::vector<double>& w = host_input(buffers, "w", hidden, key);
    std::vector<double>& dx = host_output(buffers, "dx", m * s);
    std::vector<double>& dw = host_output(buffers, "dw", hidden);
    std::fill(dw.begin(), dw.end(), 0.0);
    const double eps = static_cast<double>(static_cast<float>(rmsnorm_bwd_eps));
    const double h = static_cast<double>(hidden);
    for (std::int64_t r = 0; r < m; ++r) {
        const std::size_t row = static_cast<std::size_t>(r * s);
        double sxx = 0.0, sgx = 0.0;
        for (std::int64_t c = 0; c < hidden; ++c) {
            sxx += x[row + c] * x[row + c];
            sgx += dy[row + c] * w[static_cast<std::size_t>(c)] * x[row + c];
        }
        const double rstd = 1.0 / std::sqrt(sxx / h + eps);
        const double k = rstd * rstd * rstd * (sgx / h);
        for (std::int64_t c = 0; c < hidden; ++c) {
            dx[row + c] = rstd * dy[row + c] * w[static_cast<std::size_t>(c)] - k * x[row + c];
            dw[static_cast<std::size_t>(c)] += dy[row + c] * x[row + c] * rstd;
        }
    }
}

}  // namespace ktune
