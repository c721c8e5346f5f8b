// The CPU reference of linear_skinny/fwd (kernels/linear_skinny/linear_skinny_fwd.op.yaml): y = x W^T with W dense
// [N, K] row-major, in double. The scratch is the kernel's own and has no reference value.
#include <cstdint>
#include <vector>

#include "kernels/op.hpp"

namespace ktune {

void linear_skinny_fwd_cpu_reference(const Problem& p, HostBuffers& buffers) {
    const char* key = "linear_skinny/fwd";
    const std::int64_t rows = axis(p, "M", key), outs = axis(p, "N", key), ins = axis(p, "K", key);
    const std::vector<double>& x = host_input(buffers, "x", rows * ins, key);
    const std::vector<double>& w = host_input(buffers, "w", outs * ins, key);
    std::vector<double>& y = buffers["y"];
    y.assign(static_cast<std::size_t>(rows * outs), 0.0);
    for (std::int64_t m = 0; m < rows; ++m)
        for (std::int64_t n = 0; n < outs; ++n) {
            double acc = 0.0;
            for (std::int64_t k = 0; k < ins; ++k)
                acc += x[static_cast<std::size_t>(m * ins + k)] * w[static_cast<std::size_t>(n * ins + k)];
            y[static_cast<std::size_t>(m * outs + n)] = acc;
        }
}

}  // namespace ktune
