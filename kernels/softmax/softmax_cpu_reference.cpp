// The CPU reference of softmax/fwd (kernels/softmax/softmax_fwd.op.yaml): out[r, :] = softmax(scale * x[r, :]).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

#include "kernels/op.hpp"

namespace ktune {

// out in double (scale rounded to float, as the kernels receive it); out's padding columns are left as they are
// (out is created, filled with NaN, when absent or of the wrong size).
void softmax_fwd_cpu_reference(const Problem& p, HostBuffers& buffers) {
    constexpr std::string_view key = "softmax/fwd";
    constexpr double softmax_scale = 0.5;  // the op's scale argument
    const std::int64_t m = axis(p, "M", key), n = axis(p, "N", key), s = axis(p, "S", key);
    const std::vector<double>& x = host_input(buffers, "x", m * s, key);
    std::vector<double>& out = host_output(buffers, "out", m * s);
    const double scale = static_cast<double>(static_cast<float>(softmax_scale));
    for (std::int64_t r = 0; r < m; ++r) {
        const std::size_t row = static_cast<std::size_t>(r * s);
        double mx = -std::numeric_limits<double>::infinity();
        for (std::int64_t c = 0; c < n; ++c) mx = std::max(mx, scale * x[row + c]);
        double sum = 0.0;
        for (std::int64_t c = 0; c < n; ++c) sum += std::exp(scale * x[row + c] - mx);
        for (std::int64_t c = 0; c < n; ++c) out[row + c] = std::exp(scale * x[row + c] - mx) / sum;
    }
}

}  // namespace ktune
