// The CPU references of rmsnorm/fwd (kernels/rmsnorm/rmsnorm_fwd.op.yaml) and rmsnorm/fwd_gemma
// (rmsnorm_fwd_gemma.op.yaml): y[r, c] = x[r, c] * rsqrt(mean_c(x[r, :]^2) + eps) * w[c], (1 + w[c]) for Gemma.
#include <cmath>
#include <cstdint>

#include "kernels/op.hpp"

namespace ktune {
namespace {

constexpr double rmsnorm_eps = 1e-6;  // the op's eps argument

// y computed in double from the given x and w (eps rounded to float, as the kernels receive it); y is not rounded to
// the storage type, so compare with the dtype's tolerance. y's padding columns are left as they are (y is created,
// filled with NaN, when absent or of the wrong size).
void rmsnorm_fwd(const Problem& p, HostBuffers& buffers, bool gemma) {
    const std::string_view key = gemma ? "rmsnorm/fwd_gemma" : "rmsnorm/fwd";
    const std::int64_t m = axis(p, "M", key), h = axis(p, "H", key), s = axis(p, "S", key);
    const std::vector<double>& x = host_input(buffers, "x", m * s, key);
    const std::vector<double>& w = host_input(buffers, "w", h, key);
    std::vector<double>& y = host_output(buffers, "y", m * s);
    const double eps = static_cast<double>(static_cast<float>(rmsnorm_eps));
    for (std::int64_t r = 0; r < m; ++r) {
        const std::size_t row = static_cast<std::size_t>(r * s);
        double sum_sq = 0.0;
        for (std::int64_t c = 0; c < h; ++c) sum_sq += x[row + c] * x[row + c];
        const double inv_rms = 1.0 / std::sqrt(sum_sq / static_cast<double>(h) + eps);
        for (std::int64_t c = 0; c < h; ++c) {
            const double wc = w[static_cast<std::size_t>(c)];
            y[row + c] = x[row + c] * inv_rms * (gemma ? 1.0 + wc : wc);
        }
    }
}

}  // namespace

void rmsnorm_fwd_cpu_reference(const Problem& p, HostBuffers& buffers) { rmsnorm_fwd(p, buffers, false); }
void rmsnorm_fwd_gemma_cpu_reference(const Problem& p, HostBuffers& buffers) { rmsnorm_fwd(p, buffers, true); }

}  // namespace ktune
